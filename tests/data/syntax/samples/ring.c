#include "ring.h"

static const int MAGIC = 0x52494e47;

size_t ring_size(const struct ring *r)
{
    return (r->tail + RING_CAPACITY - r->head) % RING_CAPACITY;
}

/* Appends one byte; fails when the buffer is full. */
enum ring_status ring_push(struct ring *r, byte value) {
    if (ring_size(r) == RING_CAPACITY - 1) {
        return RING_FULL;
    }
    r->data[r->tail] = value;
    r->tail = (r->tail + 1) % RING_CAPACITY;
    return RING_OK;
}

int ring_pop(struct ring *r, byte *out) {
    if (r->head == r->tail) return RING_EMPTY;
    *out = r->data[r->head];
    r->head = (r->head + 1) % RING_CAPACITY;
    return RING_OK;
}

static int (*handler)(int) = 0;

int main(int argc, char **argv) {
    struct ring r;
    ring_init(&r);
    return ring_push(&r, (byte)argc) == RING_OK ? 0 : 1;
}
