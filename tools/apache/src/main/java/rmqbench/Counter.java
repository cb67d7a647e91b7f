package rmqbench;

import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * Push consumers of one group that only count: every message received while
 * the window is open. A new group starts at each queue's end (the client's
 * CONSUME_FROM_LAST_OFFSET for a group with no stored offset).
 */
final class Counter {
    private static final String GROUP = "rmqbench_consumer";

    private final DefaultMQPushConsumer[] consumers;
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong receivedTotal = new AtomicLong();

    Counter(Options o, Window window) throws Exception {
        consumers = new DefaultMQPushConsumer[o.consumers];
        for (int i = 0; i < o.consumers; i++) {
            DefaultMQPushConsumer c = new DefaultMQPushConsumer(GROUP);
            c.setNamesrvAddr(o.namesrv);
            c.setInstanceName("rmqbench-consumer-" + i);
            c.setVipChannelEnabled(false);
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
            c.subscribe(o.topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                receivedTotal.addAndGet(msgs.size());
                if (window.isOpenAt(System.nanoTime())) {
                    received.addAndGet(msgs.size());
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumers[i] = c;
        }
    }

    void start() throws Exception {
        for (DefaultMQPushConsumer c : consumers) {
            c.start();
        }
    }

    void shutdown() {
        for (DefaultMQPushConsumer c : consumers) {
            c.shutdown();
        }
    }

    long received() {
        return received.get();
    }

    long receivedTotal() {
        return receivedTotal.get();
    }
}
