package rmqcheck;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.BrokerStatsData;
import org.apache.rocketmq.common.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.common.protocol.body.ConsumeStatsList;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.body.KVTable;
import org.apache.rocketmq.common.protocol.body.ProducerTableInfo;
import org.apache.rocketmq.common.protocol.body.QueryConsumeQueueResponseBody;
import org.apache.rocketmq.common.protocol.body.QueueTimeSpan;
import org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.common.protocol.body.TopicList;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * The broker's administration answers through the stock admin API
 * ({@code DefaultMQAdminExt}), checked by content: topic and consume stats,
 * the consumer's own answers relayed by the broker (running info, consume
 * directly, consume status), time spans, statistics, subscription groups,
 * producers, group offset cloning, the consume queue, KV config, NameServer
 * settings, write permission and runtime broker settings; and mqadmin
 * consumerStatus run in this JVM while the consumer is online.
 */
final class AdminScenario {
    private AdminScenario() {}

    static final int MESSAGES = 8;
    static final long STATS_TIMEOUT_MS = 30_000;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        String group = env.name("g");
        DefaultMQProducer p = env.producer("p");
        List<SendResult> sent = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            sent.add(p.send(Env.message(topic, "T", "adm-" + i), Env.SEND_TIMEOUT_MS));
        }
        AtomicInteger consumed = new AtomicInteger();
        DefaultMQPushConsumer c = env.pushConsumer("c", group);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            consumed.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        env.start(c);
        env.waitFor("all consumed", Env.CONSUME_TIMEOUT_MS, () -> consumed.get() >= MESSAGES ? Boolean.TRUE : null);

        TopicStatsTable ts = env.admin.examineTopicStats(topic);
        long max = ts.getOffsetTable().values().stream().mapToLong(o -> o.getMaxOffset()).sum();
        env.expectEq("examineTopicStats max offsets", (long) MESSAGES, max);

        // Its retry topic's queue counts too, as in Java.
        ConsumeStats cs = env.waitFor("consume stats diff 0", Env.CONSUME_TIMEOUT_MS, () -> {
            ConsumeStats s = env.admin.examineConsumeStats(group);
            long ofTopic = s.getOffsetTable().keySet().stream().filter(q -> q.getTopic().equals(topic)).count();
            return s.computeTotalDiff() == 0 && ofTopic == BasicScenarios.QUEUES ? s : null;
        });
        env.pass("examineConsumeStats", cs.getOffsetTable().size() + " queues, diff 0");

        ConsumerConnection cc = env.admin.examineConsumerConnectionInfo(group);
        env.expectEq("examineConsumerConnectionInfo members", 1, cc.getConnectionSet().size());
        String clientId = cc.getConnectionSet().iterator().next().getClientId();

        ConsumerRunningInfo info = env.admin.getConsumerRunningInfo(group, clientId, false);
        boolean subscribed = info.getSubscriptionSet().stream().anyMatch(s -> s.getTopic().equals(topic));
        env.expectTrue("getConsumerRunningInfo (307 relayed to the client)", subscribed,
            "subscriptions " + info.getSubscriptionSet());

        SendResult first = sent.get(0);
        ConsumeMessageDirectlyResult direct =
            env.admin.consumeMessageDirectly(group, clientId, topic, first.getMsgId());
        env.expectEq("consumeMessageDirectly (309 relayed to the client)", "CR_SUCCESS",
            String.valueOf(direct.getConsumeResult()));

        Map<String, Map<MessageQueue, Long>> status = env.admin.getConsumeStatus(topic, group, "");
        env.expectTrue("getConsumeStatus (223 through 221)", status.containsKey(clientId)
            && status.get(clientId).values().stream().mapToLong(Long::longValue).sum() == MESSAGES,
            "status " + status);

        List<QueueTimeSpan> spans = env.admin.queryConsumeTimeSpan(topic, group);
        env.expectEq("queryConsumeTimeSpan queues", BasicScenarios.QUEUES, spans.size());
        for (QueueTimeSpan s : spans) {
            if (s.getMaxTimeStamp() < s.getMinTimeStamp() || s.getDelayTime() != 0) {
                throw env.fail("queryConsumeTimeSpan", "span " + s);
            }
        }

        BrokerStatsData puts = env.waitFor("TOPIC_PUT_NUMS minute sum " + MESSAGES, STATS_TIMEOUT_MS, () -> {
            BrokerStatsData d = env.admin.viewBrokerStatsData(env.brokerAddr, "TOPIC_PUT_NUMS", topic);
            return d.getStatsMinute().getSum() == MESSAGES ? d : null;
        });
        env.pass("viewBrokerStatsData TOPIC_PUT_NUMS", "minute sum " + puts.getStatsMinute().getSum()
            + ", tps " + puts.getStatsMinute().getTps());
        // The group read every message once: its minute sum is MESSAGES.
        BrokerStatsData gets = env.waitFor("GROUP_GET_NUMS minute sum " + MESSAGES, STATS_TIMEOUT_MS, () -> {
            BrokerStatsData d = env.admin.viewBrokerStatsData(env.brokerAddr, "GROUP_GET_NUMS",
                topic + "@" + group);
            return d.getStatsMinute().getSum() == MESSAGES ? d : null;
        });
        env.pass("viewBrokerStatsData GROUP_GET_NUMS", "minute sum " + gets.getStatsMinute().getSum());

        // The clone (offline, no retry topic) shows in the broker's consume
        // stats with the source's offsets: nothing behind.
        String clone = env.name("clone");
        env.admin.cloneGroupOffset(group, clone, topic, true);
        ConsumeStatsList all = env.admin.fetchConsumeStatsInBroker(env.brokerAddr, false, 5_000);
        boolean listed = all.getConsumeStatsList().stream().anyMatch(m -> m.containsKey(group));
        long clonedQueues = all.getConsumeStatsList().stream()
            .filter(m -> m.containsKey(clone))
            .flatMap(m -> m.get(clone).stream())
            .mapToLong(s -> s.getOffsetTable().keySet().stream().filter(q -> q.getTopic().equals(topic)).count())
            .sum();
        env.expectTrue("fetchConsumeStatsInBroker (317) and cloneGroupOffset (314)",
            listed && clonedQueues == BasicScenarios.QUEUES && all.getTotalDiff() == 0,
            "totalDiff " + all.getTotalDiff() + ", clone's queues " + clonedQueues);

        SubscriptionGroupWrapper groups = env.admin.getAllSubscriptionGroup(env.brokerAddr, 5_000);
        env.expectTrue("getAllSubscriptionGroup (201)", groups.getSubscriptionGroupTable().containsKey(group),
            "groups " + groups.getSubscriptionGroupTable().keySet());

        ProducerTableInfo producers = env.admin.getAllProducerInfo(env.brokerAddr);
        env.expectTrue("getAllProducerInfo (328)", producers.getData().containsKey(env.name("p")),
            "producers " + producers.getData().keySet());


        QueryConsumeQueueResponseBody cq = env.admin.queryConsumeQueue(env.brokerAddr, topic,
            first.getMessageQueue().getQueueId(), 0, 1, group);
        env.expectTrue("queryConsumeQueue (321)", cq.getQueueData().size() == 1 && cq.getSubscriptionData() != null,
            "max " + cq.getMaxQueueIndex() + ", data " + cq.getQueueData());

        env.admin.createAndUpdateKvConfig("rmqcheck", "k", "v");
        env.expectEq("getKVConfig", "v", env.admin.getKVConfig("rmqcheck", "k"));
        KVTable kv = env.admin.getKVListByNamespace("rmqcheck");
        env.expectEq("getKVListByNamespace", Collections.singletonMap("k", "v"), kv.getTable());
        env.admin.deleteKvConfig("rmqcheck", "k");
        env.expectEq("deleteKvConfig", Collections.emptyMap(), env.admin.getKVListByNamespace("rmqcheck").getTable());

        List<String> ns = Collections.singletonList(env.namesrv);
        Properties nsConfig = env.admin.getNameServerConfig(ns).get(env.namesrv);
        env.expectTrue("getNameServerConfig", nsConfig != null && nsConfig.containsKey("namesrvBrokerExpiry"),
            "config " + nsConfig);

        TopicList byCluster = env.admin.fetchTopicsByCLuster("DefaultCluster");
        env.expectTrue("fetchTopicsByCLuster (224)", byCluster.getTopicList().contains(topic), "" + byCluster.getTopicList());

        int wiped = env.admin.wipeWritePermOfBroker(env.namesrv, env.brokerName);
        env.expectTrue("wipeWritePermOfBroker", wiped >= 1, "count " + wiped);
        env.expectEq("addWritePermOfBroker", wiped, env.admin.addWritePermOfBroker(env.namesrv, env.brokerName));

        Properties drain = new Properties();
        drain.setProperty("brokerPermission", "4");
        env.admin.updateBrokerConfig(env.brokerAddr, drain);
        env.expectEq("updateBrokerConfig brokerPermission", "4",
            env.admin.getBrokerConfig(env.brokerAddr).getProperty("brokerPermission"));
        drain.setProperty("brokerPermission", "6");
        env.admin.updateBrokerConfig(env.brokerAddr, drain);

        String out = mqadmin(env, "consumerStatus", "-g", group);
        env.expectTrue("mqadmin consumerStatus", out.contains(clientId) && out.contains("Rebalance OK"), out);
    }

    /** mqadmin's logging set-up, which it refuses to run without. */
    static final String LOGBACK_TOOLS = "<configuration><appender name=\"E\" "
        + "class=\"ch.qos.logback.core.ConsoleAppender\"><target>System.err</target><encoder>"
        + "<pattern>%msg%n</pattern></encoder></appender><root level=\"WARN\"><appender-ref ref=\"E\"/>"
        + "</root></configuration>";

    /** Runs an mqadmin command in this JVM and returns what it printed. */
    static String mqadmin(Env env, String... args) throws java.io.IOException {
        java.nio.file.Path conf = java.nio.file.Paths.get(System.getProperty("rocketmq.home.dir"), "conf");
        java.nio.file.Files.createDirectories(conf);
        java.nio.file.Files.writeString(conf.resolve("logback_tools.xml"), LOGBACK_TOOLS);
        String[] all = new String[args.length + 2];
        System.arraycopy(args, 0, all, 0, args.length);
        all[args.length] = "-n";
        all[args.length + 1] = env.namesrv;
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            MQAdminStartup.main0(all, null);
        } finally {
            System.setOut(saved);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }
}
