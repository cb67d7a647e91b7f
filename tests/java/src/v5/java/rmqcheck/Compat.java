package rmqcheck;

import java.util.Map;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.QueueData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/**
 * The few client types whose package differs between the 4.9 and the 5.x
 * client (org.apache.rocketmq.common.protocol moved to
 * org.apache.rocketmq.remoting.protocol). Maven compiles src/v4 or src/v5
 * (property rmqcheck.compat) beside the suite.
 */
final class Compat {
    private Compat() {}

    /** The first broker of the NameServer's cluster info as {name, master address}, or null. */
    static String[] firstMaster(DefaultMQAdminExt admin) throws Exception {
        ClusterInfo c = admin.examineBrokerClusterInfo();
        Map<String, BrokerData> table = c.getBrokerAddrTable();
        if (table == null || table.isEmpty()) {
            return null;
        }
        BrokerData bd = table.values().iterator().next();
        return new String[] {bd.getBrokerName(), bd.getBrokerAddrs().get(MixAll.MASTER_ID),
            String.valueOf(bd.getBrokerAddrs())};
    }

    /** The master address the NameServer's route of {@code topic} names
     *  (broker id 0 of its first broker set); {@code null} when none. */
    static String masterOf(DefaultMQAdminExt admin, String topic) throws Exception {
        TopicRouteData route = admin.examineTopicRouteInfo(topic);
        for (BrokerData b : route.getBrokerDatas()) {
            return b.getBrokerAddrs().get(MixAll.MASTER_ID);
        }
        return null;
    }

    /** Whether the NameServer routes {@code topic} with {@code queues} read and write queues. */
    static boolean routed(DefaultMQAdminExt admin, String topic, int queues) {
        TopicRouteData route;
        try {
            route = admin.examineTopicRouteInfo(topic);
        } catch (Exception e) {
            return false;
        }
        for (QueueData q : route.getQueueDatas()) {
            if (q.getWriteQueueNums() == queues && q.getReadQueueNums() == queues) {
                return true;
            }
        }
        return false;
    }

    /** Scenarios written against one client's packages: for 5.x, timer
     *  messages and recall, POP, and a push consumer switched to POP by the
     *  broker's assignment (the admin scenario runs on the 4.9 admin API,
     *  as mqadmin does). */
    static void addScenarios(Map<String, ClientSuite.Scenario> scenarios) {
        scenarios.put("timer", TimerScenario::run);
        scenarios.put("pop", PopScenario::run);
        scenarios.put("popmode", PopModeScenario::run);
        scenarios.put("lmqpop", LmqPopScenario::run);
    }

    /**
     * What RocketMQ's LMQ push examples do to a started client: load the
     * parent topic's route (the broker address table), then put a hand-made
     * route for the LMQ (the parent's brokers, no queue data) into the
     * client's route table, so that findBrokerAddrByTopic(lmq) works.
     */
    static void injectLmqRoute(MQClientInstance f, String parent, String lmq) {
        f.updateTopicRouteInfoFromNameServer(parent);
        TopicRouteData parentRoute = f.getTopicRouteTable().get(parent);
        if (parentRoute == null) {
            throw new CheckFailed("no route of " + parent + " in the client");
        }
        TopicRouteData r = new TopicRouteData();
        r.setBrokerDatas(new java.util.ArrayList<>(parentRoute.getBrokerDatas()));
        f.getTopicRouteTable().put(lmq, r);
    }

    static void broadcasting(DefaultMQPushConsumer c) {
        c.setMessageModel(MessageModel.BROADCASTING);
    }
}
