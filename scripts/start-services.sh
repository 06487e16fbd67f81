#!/usr/bin/env bash
# start-services.sh makes sure the servers the store's tests talk to are up
# on this machine: PostgreSQL on 127.0.0.1:5432 (database "test", trust
# auth) and Redis on 127.0.0.1:6379 (keeping nothing on disk). It starts
# whichever is down, with the commands this kind of machine uses, and waits
# until it answers. It is idempotent: when both answer it only checks.
#
# The tests read AIRLOCK_TEST_POSTGRES and AIRLOCK_TEST_REDIS for other
# servers; this script only looks after the local ones.
set -u

wait_for() { # wait_for NAME SECONDS COMMAND...
	local name=$1 secs=$2
	shift 2
	for _ in $(seq $((secs * 10))); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "start-services: $name did not answer within ${secs}s" >&2
	return 1
}

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

status=0

if ! command -v pg_isready >/dev/null || ! command -v pg_ctlcluster >/dev/null; then
	echo "start-services: PostgreSQL is not installed; install it with: apt-get install -y postgresql" >&2
	status=1
elif pg_up; then
	echo "start-services: PostgreSQL is up"
else
	echo "start-services: starting PostgreSQL"
	version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$version" ]; then
		echo "start-services: no cluster under /etc/postgresql" >&2
		status=1
	else
		pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
		wait_for PostgreSQL 30 pg_up || status=1
	fi
fi

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "start-services: Redis is not installed; install it with: apt-get install -y redis-server" >&2
	status=1
elif redis_up; then
	echo "start-services: Redis is up"
else
	echo "start-services: starting Redis"
	mkdir -p /var/lib/redis /var/log/redis
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
		--dir /var/lib/redis --logfile /var/log/redis/ci.log || true
	wait_for Redis 30 redis_up || status=1
fi

# The database the tests use exists on this kind of machine; make sure.
if [ $status -eq 0 ] && ! psql -h 127.0.0.1 -U postgres -d test -Atc 'SELECT 1' >/dev/null 2>&1; then
	echo "start-services: creating database test"
	createdb -h 127.0.0.1 -U postgres test || status=1
fi

exit $status
