package rmqbench;

/**
 * What became of each message of the LMQ load: when its send started and
 * ended, and whether it was acknowledged. Each slot is written by the one
 * thread that sent that message and read after every sender has been joined.
 */
final class LmqSends {
    static final byte UNSENT = 0;
    static final byte ACKED = 1;
    static final byte FAILED = 2;

    private final long[] startNanos;
    private final long[] endNanos;
    private final byte[] status;

    LmqSends(int messages) {
        startNanos = new long[messages];
        endNanos = new long[messages];
        status = new byte[messages];
    }

    void started(int i) {
        startNanos[i] = System.nanoTime();
    }

    void ended(int i, boolean acked) {
        endNanos[i] = System.nanoTime();
        status[i] = acked ? ACKED : FAILED;
    }

    byte status(int i) {
        return status[i];
    }

    long startNanos(int i) {
        return startNanos[i];
    }

    long endNanos(int i) {
        return endNanos[i];
    }

    /** Messages whose send was acknowledged. */
    long acked() {
        long n = 0;
        for (byte s : status) {
            if (s == ACKED) {
                n++;
            }
        }
        return n;
    }
}
