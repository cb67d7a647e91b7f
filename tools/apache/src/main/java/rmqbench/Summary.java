package rmqbench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;

/**
 * The results table of bench-vs-apache.sh. Reads the script's records (one
 * JSON object a line: load, target, tool, report, broker_cpu_ticks,
 * namesrv_cpu_ticks, clk_tck, rss_hwm_kib, flush) and the load report each
 * names (the load program's JSON line or rmq-bench's --json file), then
 * prints one markdown table and writes it, with every figure, as
 * results.md and results.json.
 *
 * <p>usage: rmqbench.Summary RECORDS OUT_DIR --base TARGET [--pair A:B]...
 * Ratios are to the base target's row of the same load; each --pair adds
 * A's ratios to B as well.
 */
public final class Summary {
    private Summary() {
    }

    /** One row: a load against a target, with the figures derived. */
    private static final class Row {
        String load;
        String target;
        String flush;
        long sent;
        long received;
        long errors;
        double msgsPerS;
        double p99Ms;
        double cpuUsPerMsg;
        Double namesrvCpuMs;
        double rssMiB;
        String firstError;
        final Map<String, Double> rateRatio = new LinkedHashMap<>();
        final Map<String, Double> cpuRatio = new LinkedHashMap<>();
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 4 || !args[2].equals("--base")) {
            System.err.println("usage: rmqbench.Summary RECORDS OUT_DIR --base TARGET [--pair A:B]...");
            System.exit(2);
        }
        Path records = Paths.get(args[0]);
        Path out = Paths.get(args[1]);
        String base = args[3];
        Map<String, String> pairs = new LinkedHashMap<>();
        for (int i = 4; i + 1 < args.length; i += 2) {
            String[] ab = args[i + 1].split(":", 2);
            pairs.put(ab[0], ab[1]);
        }
        List<Row> rows = new ArrayList<>();
        for (String line : Files.readAllLines(records, StandardCharsets.UTF_8)) {
            if (!line.isBlank()) {
                rows.add(row(JSON.parseObject(line)));
            }
        }
        for (Row r : rows) {
            ratio(r, find(rows, r.load, base), base);
            String other = pairs.get(r.target);
            if (other != null) {
                ratio(r, find(rows, r.load, other), other);
            }
        }
        List<String> bases = new ArrayList<>();
        bases.add(base);
        for (String b : pairs.values()) {
            if (!bases.contains(b)) {
                bases.add(b);
            }
        }
        String md = markdown(rows, bases);
        System.out.print(md);
        Files.createDirectories(out);
        Files.writeString(out.resolve("results.md"), md, StandardCharsets.UTF_8);
        Files.writeString(out.resolve("results.json"), json(rows), StandardCharsets.UTF_8);
        System.err.println("wrote " + out.resolve("results.md") + " and " + out.resolve("results.json"));
    }

    private static Row row(JSONObject rec) throws IOException {
        Row r = new Row();
        r.load = rec.getString("load");
        r.target = rec.getString("target");
        r.flush = rec.getString("flush");
        JSONObject rep = JSON.parseObject(
            Files.readString(Paths.get(rec.getString("report")), StandardCharsets.UTF_8));
        if ("rmq-bench".equals(rec.getString("tool"))) {
            r.sent = rep.getLongValue("sent");
            r.received = rep.getLongValue("received");
            r.errors = rep.getLongValue("send_errors") + rep.getLongValue("consume_errors");
            r.msgsPerS = rep.getDoubleValue("send_rate");
            JSONObject lat = rep.getJSONObject("send_latency");
            r.p99Ms = lat == null ? 0 : lat.getDoubleValue("p99_us") / 1000.0;
        } else {
            r.sent = rep.getLongValue("sent");
            r.received = rep.getLongValue("received");
            r.errors = rep.getLongValue("errors");
            r.msgsPerS = rep.getDoubleValue("msgs_per_s");
            r.p99Ms = rep.getDoubleValue("p99_us") / 1000.0;
        }
        r.firstError = rep.getString("first_error");
        double tck = rec.getDoubleValue("clk_tck");
        double cpuUs = rec.getDoubleValue("broker_cpu_ticks") / tck * 1e6;
        long msgs = r.sent + r.received;
        r.cpuUsPerMsg = msgs > 0 ? cpuUs / msgs : 0;
        Long ns = rec.getLong("namesrv_cpu_ticks");
        r.namesrvCpuMs = ns == null ? null : ns / tck * 1e3;
        r.rssMiB = rec.getDoubleValue("rss_hwm_kib") / 1024.0;
        return r;
    }

    private static Row find(List<Row> rows, String load, String target) {
        for (Row r : rows) {
            if (r.load.equals(load) && r.target.equals(target)) {
                return r;
            }
        }
        return null;
    }

    private static void ratio(Row r, Row base, String name) {
        if (base == null || base.msgsPerS <= 0 || base.cpuUsPerMsg <= 0) {
            return;
        }
        r.rateRatio.put(name, r.msgsPerS / base.msgsPerS);
        r.cpuRatio.put(name, r.cpuUsPerMsg / base.cpuUsPerMsg);
    }

    private static String markdown(List<Row> rows, List<String> bases) {
        StringBuilder b = new StringBuilder();
        b.append("| load | target | flush | msgs/s | p99 ms | broker CPU µs/msg | NameServer CPU ms | broker RSS max MiB");
        for (String base : bases) {
            b.append(" | msgs/s ÷ ").append(base).append(" | CPU/msg ÷ ").append(base);
        }
        b.append(" | errors |\n|---|---|---|---:|---:|---:|---:|---:");
        b.append("|---:|---:".repeat(bases.size()));
        b.append("|---:|\n");
        for (Row r : rows) {
            b.append(String.format(Locale.ROOT, "| %s | %s | %s | %.0f | %.2f | %.1f | %s | %.0f",
                r.load, r.target, r.flush.replace("_FLUSH", ""), r.msgsPerS, r.p99Ms, r.cpuUsPerMsg,
                r.namesrvCpuMs == null ? "in broker" : String.format(Locale.ROOT, "%.0f", r.namesrvCpuMs),
                r.rssMiB));
            for (String base : bases) {
                b.append(" | ").append(fmt(r.rateRatio.get(base)));
                b.append(" | ").append(fmt(r.cpuRatio.get(base)));
            }
            b.append(" | ").append(r.errors).append(" |\n");
        }
        for (Row r : rows) {
            if (r.firstError != null) {
                b.append(String.format(Locale.ROOT, "%n%s on %s, first error: %s%n",
                    r.load, r.target, r.firstError));
            }
        }
        return b.toString();
    }

    private static String fmt(Double v) {
        return v == null ? "" : String.format(Locale.ROOT, "%.2f", v);
    }

    private static String json(List<Row> rows) {
        JSONArray a = new JSONArray();
        for (Row r : rows) {
            JSONObject o = new JSONObject(true);
            o.put("load", r.load);
            o.put("target", r.target);
            o.put("flush", r.flush);
            o.put("sent", r.sent);
            o.put("received", r.received);
            o.put("errors", r.errors);
            o.put("msgs_per_s", r.msgsPerS);
            o.put("p99_ms", r.p99Ms);
            o.put("broker_cpu_us_per_msg", r.cpuUsPerMsg);
            o.put("namesrv_cpu_ms", r.namesrvCpuMs);
            o.put("broker_rss_max_mib", r.rssMiB);
            o.put("msgs_per_s_ratio", r.rateRatio);
            o.put("cpu_per_msg_ratio", r.cpuRatio);
            o.put("first_error", r.firstError);
            a.add(o);
        }
        return JSON.toJSONString(a, true) + "\n";
    }
}
