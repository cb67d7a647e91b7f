package rmqbench;

import java.util.List;

import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;

/**
 * Creates the load's topic (and the POP load's consumer group) on the broker
 * and waits until the NameServer routes the topic.
 */
final class Topics {
    /** The template topic a create request names (the broker's default). */
    private static final String DEFAULT_TOPIC = "TBW102";
    /** Timeout of one admin request, ms. */
    private static final long REQUEST_TIMEOUT_MS = 5_000;
    /** Longest wait for the NameServer to know the topic, ms. */
    private static final long ROUTE_TIMEOUT_MS = 30_000;
    /** Gap between route look-ups, ms. */
    private static final long ROUTE_POLL_MS = 100;

    private Topics() {
    }

    /** UPDATE_AND_CREATE_TOPIC on {@code broker}: read+write, {@code queues} each way. */
    static void create(DefaultMQProducer started, String broker, String topic, int queues)
            throws Exception {
        TopicConfig config = new TopicConfig(topic, queues, queues, PermName.PERM_READ | PermName.PERM_WRITE);
        api(started).createTopic(broker, DEFAULT_TOPIC, config, REQUEST_TIMEOUT_MS);
    }

    /**
     * UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on {@code broker} with the group's
     * defaults: Apache's proxy refuses a group its broker does not know.
     */
    static void createGroup(DefaultMQProducer started, String broker, String group) throws Exception {
        SubscriptionGroupConfig config = new SubscriptionGroupConfig();
        config.setGroupName(group);
        api(started).createSubscriptionGroup(broker, config, REQUEST_TIMEOUT_MS);
    }

    /**
     * Polls the NameServer until it routes {@code queues} write queues of
     * {@code topic} (the broker registers a new topic with it right away, but
     * asynchronously).
     */
    static void awaitRoute(DefaultMQProducer started, String topic, int queues) throws Exception {
        long deadline = System.currentTimeMillis() + ROUTE_TIMEOUT_MS;
        String last = "no answer";
        while (System.currentTimeMillis() < deadline) {
            try {
                List<MessageQueue> mqs = started.fetchPublishMessageQueues(topic);
                if (mqs.size() >= queues) {
                    return;
                }
                last = mqs.size() + " queues routed";
            } catch (MQClientException e) {
                last = e.getErrorMessage() != null ? e.getErrorMessage() : e.toString();
            }
            Thread.sleep(ROUTE_POLL_MS);
        }
        throw new IllegalStateException("topic " + topic + " not routed with " + queues
            + " queues within " + ROUTE_TIMEOUT_MS + " ms: " + last);
    }

    private static MQClientAPIImpl api(DefaultMQProducer started) {
        return started.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
    }
}
