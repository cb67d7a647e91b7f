package rmqcheck;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.common.message.MessageExt;

/** Messages a consumer was handed, in arrival order; waits are bounded. */
final class Received {
    /** One delivery. */
    record Msg(String key, String body, String tags, String topic, int queueId, long queueOffset,
               int reconsumeTimes, long receivedAt, String by, MessageExt ext) {}

    private final List<Msg> list = new ArrayList<>();

    synchronized void add(MessageExt m, String by) {
        list.add(new Msg(m.getKeys(), new String(m.getBody(), StandardCharsets.UTF_8), m.getTags(),
            m.getTopic(), m.getQueueId(), m.getQueueOffset(), m.getReconsumeTimes(),
            System.currentTimeMillis(), by, m));
        notifyAll();
    }

    synchronized List<Msg> snapshot() {
        return new ArrayList<>(list);
    }

    synchronized int size() {
        return list.size();
    }

    /** Waits until at least {@code n} deliveries arrived; false on timeout. */
    synchronized boolean awaitCount(int n, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (list.size() < n) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return true;
    }
}
