// Committed offsets of many consumer groups, read with the JVM's Kafka AdminClient and written to a file as
// columns, so the Python side (mm2ctl.inspector.reads.committed_offsets) maps them into Arrow arrays without an object per
// offset. The Python side compiles this source at run time with Janino, the compiler Spark ships for its own
// generated code: nothing here is built ahead or committed as a binary. Janino reads Java 8 without generics
// (type arguments are erased), hence the raw types and casts.
//
// dump(settings, groups, groupsPerRequest, timeoutMs, path, provenancePrefix) asks for the groups' offsets, groupsPerRequest groups
// to a ListConsumerGroupOffsets call; the AdminClient sends each call's groups in one OffsetFetch request per
// coordinator (KIP-709, brokers 3.3+; older brokers get one request per group). A group whose lookup failed gets
// its error (Kafka's error name and the message), never an exception: partial failure is data.
//
// The file, little-endian:
//   int32 version (2), int32 groups
//   per group, in the order asked: int32 rows, or -1 and two strings (error name, message) when its lookup failed
//   int32 topics, then each topic name as a string
//   int32 provenances, then each as a string: the distinct commit metadata that starts with provenancePrefix
//   zero bytes up to a multiple of 8
//   int64 committed offset[rows], int32 partition[rows], int32 topic number[rows], int32 provenance number[rows]
// where a provenance number is -1 for metadata that does not start with the prefix (a consumer's, MM2's, none),
// a string is an int32 length and that many UTF-8 bytes, and a group's rows follow the previous group's.
// Partitions the group has no committed offset on are left out. The inputs are encoded the same way: settings as
// an int32 count of key-value string pairs, groups as an int32 count of strings, both big-endian
// (DataInputStream's order).
package mm2ctl.core;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;

public class CommittedOffsets {
    public static final int VERSION = 2;

    /** Reads the groups' committed offsets and writes them to path; returns the number of rows written. */
    public int dump(byte[] settings, byte[] groups, int groupsPerRequest, int timeoutMs, String path,
            String provenancePrefix) throws IOException {
        String[] names = strings(groups);
        Properties config = new Properties();
        String[] pairs = strings(settings);
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            config.setProperty(pairs[i], pairs[i + 1]);
        }
        Admin admin = Admin.create(config);
        int[] rows = new int[1];
        byte[] out;
        try {
            out = read(admin, names, Math.max(1, groupsPerRequest), timeoutMs, rows, provenancePrefix);
        } finally {
            admin.close(java.time.Duration.ofMillis(Math.min(timeoutMs, 5000)));
        }
        FileOutputStream file = new FileOutputStream(path);
        try {
            file.write(out);
        } finally {
            file.close();
        }
        return rows[0];
    }

    private static byte[] read(
            Admin admin, String[] groups, int groupsPerRequest, int timeoutMs, int[] rows, String prefix) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        ListConsumerGroupOffsetsOptions options =
                (ListConsumerGroupOffsetsOptions) new ListConsumerGroupOffsetsOptions().timeoutMs(Integer.valueOf(timeoutMs));
        KafkaFuture[] futures = new KafkaFuture[groups.length];
        for (int start = 0; start < groups.length; start += groupsPerRequest) {
            int end = Math.min(groups.length, start + groupsPerRequest);
            Map specs = new HashMap();
            for (int i = start; i < end; i++) {
                specs.put(groups[i], new ListConsumerGroupOffsetsSpec());
            }
            ListConsumerGroupOffsetsResult result = admin.listConsumerGroupOffsets(specs, options);
            for (int i = start; i < end; i++) {
                futures[i] = result.partitionsToOffsetAndMetadata(groups[i]);
            }
        }
        Map[] found = new Map[groups.length];
        String[] codes = new String[groups.length];
        String[] messages = new String[groups.length];
        int total = 0;
        for (int i = 0; i < groups.length; i++) {
            try {
                found[i] = (Map) futures[i].get(Math.max(0L, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
                total += found[i].size();
            } catch (ExecutionException e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                codes[i] = Errors.forException(cause).name();
                messages[i] = String.valueOf(cause.getMessage());
            } catch (TimeoutException e) {
                codes[i] = Errors.REQUEST_TIMED_OUT.name();
                messages[i] = "no answer within " + timeoutMs + " ms";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                codes[i] = Errors.UNKNOWN_SERVER_ERROR.name();
                messages[i] = "interrupted";
            }
        }
        return encode(found, codes, messages, total, rows, prefix);
    }

    private static byte[] encode(
            Map[] found, String[] codes, String[] messages, int total, int[] rows, String prefix) {
        Map topicNumbers = new HashMap();
        List topics = new ArrayList();
        Map provenanceNumbers = new HashMap();
        List provenances = new ArrayList();
        int[] provenanceOf = new int[total];
        long[] offsets = new long[total];
        int[] partitions = new int[total];
        int[] topicOf = new int[total];
        int[] counts = new int[found.length];
        int n = 0;
        for (int i = 0; i < found.length; i++) {
            if (found[i] == null) {
                counts[i] = -1;
                continue;
            }
            int first = n;
            Iterator entries = found[i].entrySet().iterator();
            while (entries.hasNext()) {
                Map.Entry entry = (Map.Entry) entries.next();
                OffsetAndMetadata committed = (OffsetAndMetadata) entry.getValue();
                if (committed == null) {
                    continue; // the group has no committed offset on this partition
                }
                TopicPartition tp = (TopicPartition) entry.getKey();
                Integer topic = (Integer) topicNumbers.get(tp.topic());
                if (topic == null) {
                    topic = Integer.valueOf(topics.size());
                    topicNumbers.put(tp.topic(), topic);
                    topics.add(tp.topic());
                }
                offsets[n] = committed.offset();
                partitions[n] = tp.partition();
                topicOf[n] = topic.intValue();
                provenanceOf[n] = -1;
                String metadata = committed.metadata();
                if (metadata != null && metadata.startsWith(prefix)) {
                    Integer number = (Integer) provenanceNumbers.get(metadata);
                    if (number == null) {
                        number = Integer.valueOf(provenances.size());
                        provenanceNumbers.put(metadata, number);
                        provenances.add(metadata);
                    }
                    provenanceOf[n] = number.intValue();
                }
                n++;
            }
            counts[i] = n - first;
        }
        rows[0] = n;
        byte[][] topicNames = new byte[topics.size()][];
        int header = 8;
        for (int i = 0; i < found.length; i++) {
            header += 4;
            if (counts[i] < 0) {
                header += 8 + utf8(codes[i]).length + utf8(messages[i]).length;
            }
        }
        header += 4;
        for (int t = 0; t < topicNames.length; t++) {
            topicNames[t] = utf8((String) topics.get(t));
            header += 4 + topicNames[t].length;
        }
        byte[][] provenanceNames = new byte[provenances.size()][];
        header += 4;
        for (int v = 0; v < provenanceNames.length; v++) {
            provenanceNames[v] = utf8((String) provenances.get(v));
            header += 4 + provenanceNames[v].length;
        }
        int columns = (header + 7) & ~7;
        ByteBuffer out = ByteBuffer.allocate(columns + n * 20).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(VERSION);
        out.putInt(found.length);
        for (int i = 0; i < found.length; i++) {
            out.putInt(counts[i]);
            if (counts[i] < 0) {
                putString(out, utf8(codes[i]));
                putString(out, utf8(messages[i]));
            }
        }
        out.putInt(topicNames.length);
        for (int t = 0; t < topicNames.length; t++) {
            putString(out, topicNames[t]);
        }
        out.putInt(provenanceNames.length);
        for (int v = 0; v < provenanceNames.length; v++) {
            putString(out, provenanceNames[v]);
        }
        out.position(columns);
        out.asLongBuffer().put(offsets, 0, n);
        out.position(columns + n * 8);
        out.asIntBuffer().put(partitions, 0, n);
        out.position(columns + n * 12);
        out.asIntBuffer().put(topicOf, 0, n);
        out.position(columns + n * 16);
        out.asIntBuffer().put(provenanceOf, 0, n);
        return out.array();
    }

    private static String[] strings(byte[] encoded) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(encoded));
        String[] out = new String[in.readInt()];
        for (int i = 0; i < out.length; i++) {
            byte[] b = new byte[in.readInt()];
            in.readFully(b);
            out[i] = new String(b, StandardCharsets.UTF_8);
        }
        return out;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void putString(ByteBuffer out, byte[] b) {
        out.putInt(b.length);
        out.put(b);
    }
}
