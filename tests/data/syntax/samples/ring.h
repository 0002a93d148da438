/* ring.h - a fixed-size ring buffer of bytes. */
#ifndef RING_H
#define RING_H

#include <stddef.h>

#define RING_CAPACITY 256

typedef unsigned char byte;

struct ring {
    byte data[RING_CAPACITY];
    size_t head;
    size_t tail;
};

enum ring_status { RING_OK, RING_FULL, RING_EMPTY };

union word {
    unsigned int value;
    byte bytes[4];
};

typedef struct {
    int dropped;
} ring_stats;

/* Resets the buffer to empty. */
static inline void ring_init(struct ring *r) {
    r->head = r->tail = 0;
}

size_t ring_size(const struct ring *r);
enum ring_status ring_push(struct ring *r, byte value);

#endif
