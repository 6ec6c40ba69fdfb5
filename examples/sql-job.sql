-- Revenue per shop, from the orders topic to an upsert topic.
SET 'pipeline.name' = 'revenue-per-shop';

CREATE TABLE orders (
  shop   STRING,
  amount DOUBLE
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = 'revenue-per-shop',
  'scan.startup.mode' = 'group-offsets',
  'properties.auto.offset.reset' = 'earliest',
  'properties.security.protocol' = 'SASL_PLAINTEXT',
  'properties.sasl.mechanism' = 'PLAIN',
  'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="revenue" password="${KAFKA_PASSWORD}";',
  'format' = 'json'
);

CREATE TABLE revenue (
  shop  STRING,
  total DOUBLE,
  PRIMARY KEY (shop) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'revenue',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.security.protocol' = 'SASL_PLAINTEXT',
  'properties.sasl.mechanism' = 'PLAIN',
  'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="revenue" password="${KAFKA_PASSWORD}";',
  'key.format' = 'json',
  'value.format' = 'json'
);

-- Refunds (negative amounts) are not revenue.
INSERT INTO revenue
SELECT shop, SUM(amount) FROM orders WHERE amount > 0 GROUP BY shop;
