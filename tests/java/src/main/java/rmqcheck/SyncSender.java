package rmqcheck;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;

/**
 * A thread sending {@code k-0, k-1, ...} synchronously without pause until
 * stopped, as the kill scenarios need: each SEND_OK is handed to
 * {@code onAck}, other statuses are counted by name, and a failed send
 * (the master gone) is counted and followed by a short pause.
 */
final class SyncSender {
    final Map<String, Integer> refused = Collections.synchronizedMap(new TreeMap<>());
    final AtomicInteger failures = new AtomicInteger();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    SyncSender(DefaultMQProducer p, String topic, String name, BiConsumer<String, SendResult> onAck) {
        thread = new Thread(() -> {
            for (int i = 0; !stop.get(); i++) {
                String key = "k-" + i;
                try {
                    SendResult r = p.send(Env.message(topic, "T", key));
                    if (r.getSendStatus() == SendStatus.SEND_OK) {
                        onAck.accept(key, r);
                    } else {
                        refused.merge(r.getSendStatus().name(), 1, Integer::sum);
                    }
                } catch (Exception e) {
                    failures.incrementAndGet();
                    try {
                        Thread.sleep(Env.PROBE_INTERVAL_MS);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }, name);
        thread.start();
    }

    /** Tells it to stop and waits up to {@code ms}; false if it still runs. */
    boolean stop(long ms) throws InterruptedException {
        stop.set(true);
        thread.join(ms);
        return !thread.isAlive();
    }
}
