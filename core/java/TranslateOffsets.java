package mm2ctl.lab;

import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * Kafka's own translation of consumer group offsets from MirrorMaker 2's checkpoints: the batched
 * RemoteClusterUtils.translateOffsets(Map, String, Pattern, Duration) of connect-mirror-client 4.3 (KIP-1239), the
 * lab's reference for what mm2ctl reads from the same topic.
 *
 * <p>Usage: TranslateOffsets REMOTE_CLUSTER_ALIAS GROUP_REGEX TIMEOUT_MS
 *
 * <p>Stdin, UTF-8: the MirrorClient settings as a Java properties text: bootstrap.servers of the cluster the
 * checkpoints topic lives on (MM2's target), any client security settings, and replication.policy.class /
 * replication.policy.separator when not the default (they name the checkpoints topic).
 *
 * <p>Stdout, one tab-separated line per translated partition: GROUP TOPIC PARTITION OFFSET (the topic as
 * named on that cluster, the offset MM2's checkpoint gives there), then the line "done". Any failure prints one
 * line on stderr and exits 3; no line "done" then.
 */
public final class TranslateOffsets {
  public static void main(String[] args) {
    if (args.length != 3) {
      System.err.println("usage: TranslateOffsets REMOTE_CLUSTER_ALIAS GROUP_REGEX TIMEOUT_MS");
      System.exit(2);
    }
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    try {
      Properties settings = new Properties();
      settings.load(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      Map<String, Object> props = new HashMap<>();
      for (String name : settings.stringPropertyNames()) {
        props.put(name, settings.getProperty(name));
      }
      Map<String, Map<TopicPartition, OffsetAndMetadata>> translated =
          RemoteClusterUtils.translateOffsets(
              props, args[0], Pattern.compile(args[1]), Duration.ofMillis(Long.parseLong(args[2])));
      for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> group : translated.entrySet()) {
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : group.getValue().entrySet()) {
          TopicPartition tp = e.getKey();
          out.println(group.getKey() + "\t" + tp.topic() + "\t" + tp.partition() + "\t" + e.getValue().offset());
        }
      }
      out.println("done");
      out.flush();
    } catch (Exception e) {
      out.flush();
      System.err.println("translateOffsets failed: " + e.getClass().getName() + ": " + e.getMessage());
      System.exit(3);
    }
  }
}
