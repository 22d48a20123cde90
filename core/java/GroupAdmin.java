// The group calls librdkafka does not have, made with the Java Kafka AdminClient (kafka-clients 4.1+): listing every
// group type (classic, consumer, share, streams), describing share and streams groups, reading share groups' start
// offsets and streams groups' committed offsets, and writing both. mm2ctl.core.kafka.group_admin compiles this file with
// javac once and runs it as a short-lived JVM per batch of calls, or, for a live session, as a long-lived client
// (the setting mm2ctl.serve=true) that answers batch after batch.
//
// Input on stdin, UTF-8: the client settings as a Java properties text, a line "%%", then one call per line, each a
// command and its tab-separated fields (a long-lived client reads batches, each ended by a line "%%"):
//   list
//   describe-share <group>...            describe-streams <group>...
//   share-offsets <group>...             streams-offsets <group>...
//   alter-share <group> <topic>:<partition>=<offset>...
//   alter-streams <group> <topic>:<partition>=<offset>...   (committed with the metadata of the "metadata" setting)
//   delete-share <group>                                   (the whole share group, which must be empty)
// Output on stdout, one tab-separated record per line, in the order asked:
//   group <id> <type> <state> <protocol>                     (list; type: classic|consumer|share|streams|unknown)
//   described <group> <type> <state> <members>              (describe-*)
//   topic <group> <role> <topic>                             (describe-streams: source|repartition|changelog)
//   offset <group> <topic> <partition> <offset> <lag|-1>     (share-offsets: start offset; streams-offsets: lag -1)
//   written <group> <topic> <partition>                      (alter-*)
//   refused <group> <topic> <partition> <ErrorName> <message>  (alter-*: that partition was not written)
//   deleted <group>                                          (delete-share)
//   error <group> <ErrorName> <message>                      (a group's failure: partial failure is data)
//   unsupported <command|group> <message>                    (the cluster is older than the call: no such group)
//   done                                                     (after each batch)
// A failure of the whole run (bad settings, no broker) prints "fatal <ExceptionClass> <message>" and exits 3; a
// long-lived client prints "fatal …" and "done" for a failed batch, and goes on.
package mm2ctl.core;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.protocol.Errors;

public final class GroupAdmin {
    private final Admin admin;
    private final PrintStream out;
    private final long timeoutMs;
    private final String metadata;

    private GroupAdmin(Admin admin, PrintStream out, long timeoutMs, String metadata) {
        this.admin = admin;
        this.out = out;
        this.timeoutMs = timeoutMs;
        this.metadata = metadata;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Properties config = new Properties();
        config.load(new StringReader(block(in)));
        long timeoutMs = Long.parseLong(config.getProperty("mm2ctl.timeout.ms", "30000"));
        String metadata = config.getProperty("mm2ctl.metadata", "");
        boolean serve = "true".equals(config.getProperty("mm2ctl.serve"));
        config.remove("mm2ctl.timeout.ms");
        config.remove("mm2ctl.metadata");
        config.remove("mm2ctl.serve");
        config.putIfAbsent("request.timeout.ms", "" + timeoutMs);
        config.putIfAbsent("default.api.timeout.ms", config.getProperty("request.timeout.ms"));
        int code = 0;
        Admin admin = null;
        try {
            admin = Admin.create(config);
            GroupAdmin self = new GroupAdmin(admin, out, timeoutMs, metadata);
            if (serve) {
                self.serve(in);
            } else {
                code = self.batch(calls(block(in)));
            }
        } catch (Exception e) {
            printFatal(out, e, timeoutMs);
            code = 3;
        } finally {
            if (admin != null) {  // a call still pending (a dead broker) is abandoned, not waited for
                admin.close(Duration.ofMillis(Math.min(timeoutMs, 2000)));
            }
        }
        out.flush();
        System.exit(code);
    }

    /** The lines up to a line "%%" or the end of input, each followed by a line end. */
    private static String block(BufferedReader in) throws Exception {
        StringBuilder text = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null && !line.equals("%%")) {
            text.append(line).append('\n');
        }
        return text.toString();
    }

    private static List<String[]> calls(String text) {
        List<String[]> calls = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isEmpty()) {
                calls.add(line.split("\t", -1));
            }
        }
        return calls;
    }

    /** One batch of calls, then "done"; a failure of the whole batch is "fatal …" and exit code 3. */
    private int batch(List<String[]> calls) {
        try {
            for (String[] call : calls) {
                run(call[0], Arrays.copyOfRange(call, 1, call.length));
            }
            out.println("done");
            return 0;
        } catch (Exception e) {
            printFatal(out, e, timeoutMs);
            return 3;
        }
    }

    /** A long-lived client: each batch of calls, ended by a line "%%", is answered up to a line "done" (after a
     * "fatal" line too), until the input ends. */
    private void serve(BufferedReader in) throws Exception {
        String batch;
        while (!(batch = block(in)).isEmpty()) {
            if (batch(calls(batch)) != 0) {
                out.println("done");
            }
            out.flush();
        }
    }

    private static void printFatal(PrintStream out, Exception e, long timeoutMs) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        String message = cause.getMessage() != null ? cause.getMessage() : "";
        if (unanswered(cause)) {  // the client words a dead cluster several ways; one wording for all of them
            message = "no answer within " + timeoutMs + " ms" + (message.isEmpty() ? "" : " (" + message + ")");
        }
        out.println(record("fatal", cause.getClass().getSimpleName(), message));
    }

    /** A timeout, or the metadata lookup that gave up on finding any broker. */
    private static boolean unanswered(Throwable cause) {
        String message = String.valueOf(cause.getMessage());
        return cause instanceof java.util.concurrent.TimeoutException
                || cause instanceof org.apache.kafka.common.errors.TimeoutException
                || message.startsWith("Failed to find brokers")
                || message.startsWith("Timed out");
    }

    private void run(String command, String[] args) throws Exception {
        try {
            switch (command) {
                case "list" -> list();
                case "describe-share" -> describeShare(Arrays.asList(args));
                case "describe-streams" -> describeStreams(Arrays.asList(args));
                case "share-offsets" -> shareOffsets(Arrays.asList(args));
                case "streams-offsets" -> streamsOffsets(Arrays.asList(args));
                case "alter-share" -> alterShare(args[0], partitions(args));
                case "alter-streams" -> alterStreams(args[0], partitions(args));
                case "delete-share" -> deleteShare(args[0]);
                default -> throw new IllegalArgumentException("unknown call " + command);
            }
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnsupportedVersionException) {
                out.println(record("unsupported", command, String.valueOf(e.getCause().getMessage())));
            } else {
                throw e;
            }
        }
    }

    private void list() throws Exception {
        for (GroupListing g : admin.listGroups().all().get(timeoutMs, TimeUnit.MILLISECONDS)) {
            String type = g.type().map(t -> t.toString().toLowerCase()).orElse("unknown");
            String state = g.groupState().map(s -> s.toString()).orElse("Unknown");
            out.println(record("group", g.groupId(), type, state, g.protocol()));
        }
    }

    private void describeShare(List<String> groups) throws Exception {
        Map<String, KafkaFuture<ShareGroupDescription>> got = admin.describeShareGroups(groups).describedGroups();
        for (String group : groups) {
            try {
                ShareGroupDescription d = got.get(group).get(timeoutMs, TimeUnit.MILLISECONDS);
                out.println(record("described", group, "share", d.groupState().toString(), "" + d.members().size()));
            } catch (ExecutionException e) {
                error(group, e);
            }
        }
    }

    private void describeStreams(List<String> groups) throws Exception {
        Map<String, KafkaFuture<StreamsGroupDescription>> got = admin.describeStreamsGroups(groups).describedGroups();
        for (String group : groups) {
            try {
                StreamsGroupDescription d = got.get(group).get(timeoutMs, TimeUnit.MILLISECONDS);
                out.println(record("described", group, "streams", d.groupState().toString(), "" + d.members().size()));
                for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
                    for (String t : s.sourceTopics()) {
                        out.println(record("topic", group, "source", t));
                    }
                    for (String t : s.repartitionSourceTopics().keySet()) {
                        out.println(record("topic", group, "repartition", t));
                    }
                    for (String t : s.stateChangelogTopics().keySet()) {
                        out.println(record("topic", group, "changelog", t));
                    }
                }
            } catch (ExecutionException e) {
                error(group, e);
            }
        }
    }

    private void shareOffsets(List<String> groups) throws Exception {
        Map<String, ListShareGroupOffsetsSpec> specs = new LinkedHashMap<>();
        for (String g : groups) {
            specs.put(g, new ListShareGroupOffsetsSpec());
        }
        var result = admin.listShareGroupOffsets(specs);
        for (String group : groups) {
            try {
                Map<TopicPartition, SharePartitionOffsetInfo> offsets =
                        result.partitionsToOffsetInfo(group).get(timeoutMs, TimeUnit.MILLISECONDS);
                for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offsets.entrySet()) {
                    SharePartitionOffsetInfo info = e.getValue();
                    if (info == null) {
                        continue;
                    }
                    long lag = info.lag().orElse(-1L);
                    out.println(offset(group, e.getKey(), info.startOffset(), lag, ""));
                }
            } catch (ExecutionException e) {
                error(group, e);
            }
        }
    }

    private void streamsOffsets(List<String> groups) throws Exception {
        Map<String, ListStreamsGroupOffsetsSpec> specs = new LinkedHashMap<>();
        for (String g : groups) {
            specs.put(g, new ListStreamsGroupOffsetsSpec());
        }
        var result = admin.listStreamsGroupOffsets(specs);
        for (String group : groups) {
            try {
                Map<TopicPartition, OffsetAndMetadata> offsets =
                        result.partitionsToOffsetAndMetadata(group).get(timeoutMs, TimeUnit.MILLISECONDS);
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    if (e.getValue() != null) {
                        String metadata = e.getValue().metadata() == null ? "" : e.getValue().metadata();
                        out.println(offset(group, e.getKey(), e.getValue().offset(), -1, metadata));
                    }
                }
            } catch (ExecutionException e) {
                error(group, e);
            }
        }
    }

    private void alterShare(String group, Map<TopicPartition, Long> offsets) throws Exception {
        var result = admin.alterShareGroupOffsets(group, offsets);
        for (TopicPartition tp : offsets.keySet()) {
            written(group, tp, result.partitionResult(tp));
        }
    }

    private void alterStreams(String group, Map<TopicPartition, Long> offsets) throws Exception {
        // No leader epoch: the offset is another cluster's translation, and a source epoch means nothing here.
        Map<TopicPartition, OffsetAndMetadata> commits = new HashMap<>();
        offsets.forEach((tp, o) -> commits.put(tp, new OffsetAndMetadata(o, metadata)));
        var result = admin.alterStreamsGroupOffsets(group, commits);
        for (TopicPartition tp : offsets.keySet()) {
            written(group, tp, result.partitionResult(tp));
        }
    }

    private void deleteShare(String group) throws Exception {
        try {
            admin.deleteShareGroups(List.of(group)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
            out.println(record("deleted", group));
        } catch (ExecutionException e) {
            error(group, e);
        }
    }

    private void written(String group, TopicPartition tp, KafkaFuture<Void> future) throws Exception {
        try {
            future.get(timeoutMs, TimeUnit.MILLISECONDS);
            out.println(record("written", group, tp.topic(), "" + tp.partition()));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            out.println(record("refused", group, tp.topic(), "" + tp.partition(), errorName(cause), "" + cause.getMessage()));
        }
    }

    private void error(String group, ExecutionException e) {
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        if (cause instanceof UnsupportedVersionException) {  // a cluster older than the group type: no such group
            out.println(record("unsupported", group, String.valueOf(cause.getMessage())));
            return;
        }
        out.println(record("error", group, errorName(cause), String.valueOf(cause.getMessage())));
    }

    private static String errorName(Throwable cause) {
        return cause instanceof ApiException api ? Errors.forException(api).name() : cause.getClass().getSimpleName();
    }

    private static Map<TopicPartition, Long> partitions(String[] args) {
        Map<TopicPartition, Long> out = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].lastIndexOf('=');
            int colon = args[i].lastIndexOf(':', eq);
            String topic = args[i].substring(0, colon);
            int partition = Integer.parseInt(args[i].substring(colon + 1, eq));
            out.put(new TopicPartition(topic, partition), Long.parseLong(args[i].substring(eq + 1)));
        }
        return out;
    }

    private static String offset(String group, TopicPartition tp, long offset, long lag, String metadata) {
        return record("offset", group, tp.topic(), "" + tp.partition(), "" + offset, "" + lag, metadata);
    }

    private static String record(String... fields) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) {
                b.append('\t');
            }
            b.append(fields[i].replace('\t', ' ').replace('\n', ' ').replace('\r', ' '));
        }
        return b.toString();
    }
}
