package rmqbench;

/**
 * The measured window, shared by every thread: a send counts when it started
 * at or after {@code startNanos} and finished at or before {@code endNanos}.
 * Both are {@link System#nanoTime()} values; Long.MAX_VALUE until set.
 */
final class Window {
    volatile long startNanos = Long.MAX_VALUE;
    volatile long endNanos = Long.MAX_VALUE;
    /** Set when the senders should stop (after the window, or on a failure). */
    volatile boolean stop;

    boolean contains(long startedNanos, long finishedNanos) {
        return startedNanos >= startNanos && finishedNanos <= endNanos;
    }

    boolean isOpenAt(long nanos) {
        return nanos >= startNanos && nanos <= endNanos;
    }
}
