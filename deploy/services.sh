#!/usr/bin/env bash
# Start the machine's Postgres, Redis and RabbitMQ when they are installed and not running
# (CI and `make run`/`make test`/`make test-amqp`). The commands are the ones this
# machine kind documents.
# Where neither is installed, nothing is started here and nothing fails: turnkeep
# (`turnkeep dev`, the test suite) then starts embedded servers from the
# turnkeep[embedded] wheels (turnkeep/embedded.py).
set -u
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql)" ]; then
    echo "starting postgres"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
    for _ in $(seq 1 50); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.2; done
  fi
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
  if command -v redis-server >/dev/null; then
    echo "starting redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && break; sleep 0.2; done
  fi
fi
# RabbitMQ: only `make test-amqp` and a deployment with an amqp:// TURNKEEP_BROKER_URL
# use it; started detached, then waited for until it accepts connections (its Erlang VM
# takes a few seconds)
if ! (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then
  if command -v rabbitmq-server >/dev/null; then
    echo "starting rabbitmq"
    rabbitmq-server -detached >/dev/null 2>&1
    for _ in $(seq 1 150); do (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null && break; sleep 0.2; done
    command -v rabbitmqctl >/dev/null && timeout 60 rabbitmqctl await_startup >/dev/null 2>&1
  fi
fi
(exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null \
  || echo "no RabbitMQ on 127.0.0.1:5672: make test-amqp needs one (apt-get install rabbitmq-server)"
(exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null \
  || echo "no Postgres on 127.0.0.1:5432: turnkeep will start an embedded one (turnkeep[embedded])"
(exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null \
  || echo "no Redis on 127.0.0.1:6379: turnkeep will start an embedded one (turnkeep[embedded])"
exit 0
