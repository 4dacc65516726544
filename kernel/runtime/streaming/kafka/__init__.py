"""Kafka's source reader and sink writer (FLIP-27 ``KafkaSource``, Sink V2 ``KafkaSink``) on
confluent-kafka (librdkafka), which only the subtasks of jobs that use Kafka import."""
