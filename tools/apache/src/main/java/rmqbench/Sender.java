package rmqbench;

import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * One sending thread: synchronous {@code send} in a loop until told to stop,
 * a new Message each time (the client stamps each with a unique id) over one
 * shared body. Counts and times only the sends inside the window.
 */
final class Sender implements Runnable {
    private final DefaultMQProducer producer;
    private final String topic;
    private final byte[] body;
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

    Sender(DefaultMQProducer producer, String topic, byte[] body, Window window, LongAdder acked) {
        this.producer = producer;
        this.topic = topic;
        this.body = body;
        this.window = window;
        this.acked = acked;
    }

    @Override
    public void run() {
        while (!window.stop) {
            long t0 = System.nanoTime();
            String error = null;
            try {
                SendResult r = producer.send(new Message(topic, body));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    error = "send status " + r.getSendStatus();
                }
            } catch (Exception e) {
                error = e.toString();
            } catch (Error e) {
                // Not ours to swallow (e.g. OutOfMemoryError): stop everyone.
                window.stop = true;
                throw e;
            }
            long t1 = System.nanoTime();
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
