"""RabbitMQ in the tests (``make test-amqp``): what a module declared is deleted when
it ends, as its Redis keys are, so runs sharing the machine's broker never meet.

A module's turnkeep processes declare its queue (``TURNKEEP_QUEUE``, the module's
name), the definition queues of the agents they serve (``<queue>.def.<hash16>``,
store/fleet.py) and an exchange of each name; Celery's pidbox and event queues are
auto-deleted with their connections.
"""

from __future__ import annotations

from kombu import Connection

from turnkeep.store.fleet import definition_queue

#: the agents modules whose definitions' queues a test module may have declared
AGENT_MODULES = ("tests.agents",)


def module_queues(queue: str) -> list[str]:
    from turnkeep.runtime.agents.registry import load_agents

    names = [queue]
    for module in AGENT_MODULES:
        agents = load_agents(module)
        names += [definition_queue(queue, h) for h in agents.hashes]
    return names


def delete_module_queues(url: str, queue: str) -> None:
    """Delete the module's queues and exchanges (each absent one is nothing to do)."""
    with Connection(url, connect_timeout=5) as conn:
        for name in module_queues(queue):
            channel = conn.channel()
            try:
                channel.queue_delete(queue=name)
                channel.exchange_delete(exchange=name)
            except conn.channel_errors:
                pass  # never declared
            finally:
                try:
                    channel.close()
                except conn.connection_errors + conn.channel_errors:
                    pass
