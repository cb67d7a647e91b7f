package rmqbench;

import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * One sending thread: one synchronous send in a loop until told to stop.
 * Counts and times only the sends inside the window. What a send is comes
 * from the load: {@link #remoting} for the 4.x client, a lambda over the
 * 5.x Producer in {@link GrpcLoad}.
 */
final class Sender implements Runnable {
    /**
     * One synchronous send: {@code null} when it succeeded, else why not, or
     * {@link #EXHAUSTED} when a load of a fixed number of messages has none
     * left (the thread then ends without counting anything).
     */
    @FunctionalInterface
    interface Send {
        String send() throws Exception;
    }

    /** Compared by identity: no failure text can be this object. */
    @SuppressWarnings("StringOperationCanBeSimplified")
    static final String EXHAUSTED = new String("nothing left to send");

    /**
     * The 4.x client's send: a new Message each time (the client stamps each
     * with a unique id) over one shared body; anything but SEND_OK fails.
     */
    static Send remoting(DefaultMQProducer producer, String topic, byte[] body) {
        return () -> {
            SendResult r = producer.send(new Message(topic, body));
            return r.getSendStatus() == SendStatus.SEND_OK ? null : "send status " + r.getSendStatus();
        };
    }

    private final Send send;
    private final Window window;
    /** Every SEND_OK over all threads, for progress lines. */
    private final LongAdder acked;

    /** Pause after a failed send, ms. */
    private static final long ERROR_PAUSE_MS = 10;

    final Histogram latencyUs = new Histogram();
    /** Sends answered SEND_OK inside the window. */
    long sent;
    /** Sends inside the window that threw or were answered other than SEND_OK. */
    long errors;
    /** Every send answered SEND_OK, warm-up included. */
    long sentTotal;
    /** Every failed send, warm-up included. */
    long errorsTotal;
    /** The first failure seen, warm-up included. */
    String firstError;

    Sender(Send send, Window window, LongAdder acked) {
        this.send = send;
        this.window = window;
        this.acked = acked;
    }

    @Override
    public void run() {
        while (!window.stop) {
            long t0 = System.nanoTime();
            String error = null;
            try {
                error = send.send();
            } catch (Exception e) {
                error = e.toString();
            } catch (Error e) {
                // Not ours to swallow (e.g. OutOfMemoryError): stop everyone.
                window.stop = true;
                throw e;
            }
            long t1 = System.nanoTime();
            if (error == EXHAUSTED) {
                return;
            }
            boolean counted = window.contains(t0, t1);
            if (error == null) {
                sentTotal++;
                acked.increment();
                if (counted) {
                    sent++;
                    latencyUs.record((t1 - t0) / 1_000);
                }
                continue;
            }
            errorsTotal++;
            if (counted) {
                errors++;
            }
            if (firstError == null) {
                firstError = error;
            }
            pauseAfterError();
        }
    }

    /**
     * A refused send (no route, broker busy) can fail in microseconds; without
     * a pause the thread would spin and load the client's CPU instead of the
     * broker. Failures are counted either way.
     */
    private static void pauseAfterError() {
        try {
            Thread.sleep(ERROR_PAUSE_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
