package rmqcheck;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A thread reading a topic's route from the NameServer every
 * {@link FailoverLoopScenario#ROUTE_POLL_MS} and recording each time the
 * master it names (broker id 0 of the first broker set) changes, with the
 * wall-clock ms it was seen: when a failover became visible to clients.
 */
final class RouteWatch {
    /** The master named from {@code atMs} on ({@code null}: none). */
    record Change(long atMs, String master) {}

    private final List<Change> changes = Collections.synchronizedList(new ArrayList<>());
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    RouteWatch(Env env, String topic) {
        thread = new Thread(() -> {
            String last = "";
            while (!stop.get()) {
                String master = null;
                try {
                    master = Compat.masterOf(env.admin, topic);
                } catch (Exception e) {
                    master = null;
                }
                if (!Objects.equals(master, last)) {
                    changes.add(new Change(System.currentTimeMillis(), master));
                    last = master;
                }
                try {
                    Thread.sleep(FailoverLoopScenario.ROUTE_POLL_MS);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "failover-route-watch");
        thread.setDaemon(true);
        thread.start();
    }

    void stop() throws InterruptedException {
        stop.set(true);
        thread.join(10_000);
    }

    List<Change> changes() {
        synchronized (changes) {
            return new ArrayList<>(changes);
        }
    }

    /** The master {@code changes} name at {@code ms} ({@code null}: none). */
    static String masterAt(List<Change> changes, long ms) {
        String master = null;
        for (Change c : changes) {
            if (c.atMs() > ms) {
                break;
            }
            master = c.master();
        }
        return master;
    }
}
