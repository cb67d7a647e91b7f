"""A started SimpleConsumer of --group on --topic with the tag filter
--filter (default `*`), for the consuming scenarios."""

from rocketmq import FilterExpression, SimpleConsumer

from .common import config, required

# Long polling of one receive, in seconds.
AWAIT_S = 5


def simple_consumer(args):
    consumer = SimpleConsumer(
        config(args),
        required(args, "group"),
        {required(args, "topic"): FilterExpression(args.get("filter", "*"))},
        await_duration=AWAIT_S,
    )
    consumer.startup()
    return consumer
