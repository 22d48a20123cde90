package mm2ctl.lab;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;

/**
 * The lab's Kafka Streams application: a member of a streams group (KIP-1071, group.protocol=streams).
 *
 * <p>Usage: StreamsApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT passthrough|count STATE_DIR
 *
 * <ul>
 *   <li>passthrough: copies each record's key and value bytes to OUTPUT.
 *   <li>count: re-keys each record by its value and counts them (a repartition topic and a changelog topic);
 *       writes each new count to OUTPUT as decimal text.
 * </ul>
 *
 * Prints the line RUNNING on stdout the first time the application reaches RUNNING. On SIGTERM it closes
 * Kafka Streams, leaving the group, and exits 0 (1 when the close timed out); it exits 1 at once when Kafka
 * Streams fails (state ERROR).
 */
public final class StreamsApp {
  public static void main(String[] args) {
    if (args.length != 6 || !(args[4].equals("passthrough") || args[4].equals("count"))) {
      System.err.println("usage: StreamsApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT passthrough|count STATE_DIR");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);

    StreamsBuilder builder = new StreamsBuilder();
    KStream<byte[], byte[]> input = builder.stream(args[2]);
    if (args[4].equals("passthrough")) {
      input.to(args[3]);
    } else {
      input
          .selectKey((key, value) -> value)
          .groupByKey()
          .count()
          .toStream()
          .mapValues(count -> Long.toString(count).getBytes(StandardCharsets.UTF_8))
          .to(args[3]);
    }

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    AtomicBoolean announced = new AtomicBoolean();
    streams.setStateListener(
        (newState, oldState) -> {
          if (newState == KafkaStreams.State.RUNNING && announced.compareAndSet(false, true)) {
            System.out.println("RUNNING");
            System.out.flush();
          } else if (newState == KafkaStreams.State.ERROR) {
            System.err.println("Kafka Streams failed (state ERROR); exiting 1");
            System.err.flush();
            Runtime.getRuntime().halt(1);
          }
        });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  CloseOptions leave =
                      CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                          .withTimeout(Duration.ofSeconds(20));
                  boolean closed = streams.close(leave);
                  System.err.println(closed ? "closed; left the group" : "close timed out");
                  System.err.flush();
                  // A JVM stopped by SIGTERM exits 143 unless a hook ends it; this one says how the close went.
                  Runtime.getRuntime().halt(closed ? 0 : 1);
                }));
    streams.start();
  }
}
