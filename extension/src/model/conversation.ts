/**
 * Which conversation the Ask Claude panel continues, and whether a streamed event or a result
 * belongs to the ask it shows. Each ask is a numbered run: New Conversation disowns the run
 * still streaming, so its late events and its result can neither show up in the cleared
 * panel nor make the next ask continue the old conversation. Pure, so it is unit-tested.
 */
export class ConversationState {
    private id: string | undefined;
    private run = 0;
    private streaming = false;

    /** Starts an ask: its run number, and the conversation it continues (undefined: a new one). */
    begin(): { run: number; conversationId: string | undefined } {
        this.run += 1;
        this.streaming = true;
        return { run: this.run, conversationId: this.id };
    }

    /** Whether an event of `conversationId` belongs to the shown ask; the first event of a new conversation names it. */
    accepts(conversationId: string): boolean {
        if (!this.streaming) {
            return false;
        }
        this.id ??= conversationId;
        return conversationId === this.id;
    }

    /** Ends `run` (with the conversation its result names); false when New Conversation disowned it. */
    end(run: number, conversationId?: string): boolean {
        if (run !== this.run) {
            return false;
        }
        this.streaming = false;
        if (conversationId) {
            this.id = conversationId;
        }
        return true;
    }

    /** New Conversation: the next ask starts one, and the running ask is no longer shown. */
    reset(): void {
        this.id = undefined;
        this.run += 1;
        this.streaming = false;
    }
}
