#!/usr/bin/env bash
# setup-sandbox.sh prepares a Debian machine, as root, for airlock's bwrap and
# container sandbox backends and their tests:
#
#   - installs bubblewrap, podman, runc, uidmap, catatonit and busybox-static
#     (apt);
#   - writes /etc/containers/containers.conf.d/50-airlock.conf, because on a
#     machine where root lacks CAP_SYS_RESOURCE podman's default ulimits
#     (nofile and nproc far above the current hard limits) make every
#     container fail to start, and because there is no systemd to be the
#     cgroup manager or the events logger;
#   - starts the Podman service that speaks the Docker Engine API on
#     $AIRLOCK_PODMAN_SOCKET (default /run/podman/podman.sock) unless one
#     already answers there;
#   - imports localhost/airlock-busybox:test, a rootfs holding only a static
#     busybox and its applets, since no registry is reachable.
#
# It is idempotent and quick when all is done already: each step checks
# before it acts. Every failure says which step failed and exits non-zero.
set -u

SOCK="${AIRLOCK_PODMAN_SOCKET:-/run/podman/podman.sock}"
IMAGE="${AIRLOCK_TEST_IMAGE:-localhost/airlock-busybox:test}"
CONF=/etc/containers/containers.conf.d/50-airlock.conf
LOG=/var/log/airlock-podman-service.log

fail() {
	echo "setup-sandbox: FAILED: $*" >&2
	exit 1
}
say() { echo "setup-sandbox: $*"; }

[ "$(id -u)" = 0 ] || fail "run me as root (I install packages and start the Podman service)"

# 1. Packages. Each binary names the Debian package that provides it.
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v newuidmap >/dev/null 2>&1 || need+=(uidmap)
[ -x /bin/busybox ] || need+=(busybox-static)
# The init the container backend asks for (HostConfig.Init).
[ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/tmp/airlock-apt.log 2>&1 || fail "apt-get update (see /tmp/airlock-apt.log)"
	apt-get install -y -qq "${need[@]}" >>/tmp/airlock-apt.log 2>&1 ||
		fail "apt-get install ${need[*]} (see /tmp/airlock-apt.log)"
fi
for b in bwrap podman runc busybox; do
	command -v "$b" >/dev/null 2>&1 || fail "$b is still missing after apt-get install"
done

# 2. Podman's configuration. 4096 open files and processes: the most a
# sandbox may ask for (sandbox.MaxOpenFiles, sandbox.MaxPids), and below the
# hard limits runc can set here without CAP_SYS_RESOURCE.
want='# Written by airlock scripts/setup-sandbox.sh.
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"'
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
	say "writing $CONF"
	mkdir -p "$(dirname "$CONF")" || fail "mkdir $(dirname "$CONF")"
	printf '%s\n' "$want" >"$CONF" || fail "write $CONF"
fi

# 3. The Docker Engine API service.
ping() { timeout 5 podman --url "unix://$SOCK" version >/dev/null 2>&1; }
if ! ping; then
	say "starting podman system service on $SOCK (log: $LOG)"
	mkdir -p "$(dirname "$SOCK")" || fail "mkdir $(dirname "$SOCK")"
	rm -f "$SOCK"
	# From the socket's directory: conmon writes files (an "oom" marker
	# when a container runs out of memory) into the service's working
	# directory, which must not be the checkout the script runs from.
	(cd "$(dirname "$SOCK")" && setsid nohup podman system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 </dev/null &)
	for _ in $(seq 50); do
		ping && break
		sleep 0.2
	done
	ping || fail "the Podman service does not answer on $SOCK (see $LOG)"
fi

# 4. The test image. Its label says which version of this recipe made it,
# so a changed recipe replaces an old image.
RECIPE=2
have=$(podman image inspect --format '{{index .Labels "airlock.recipe"}}' "$IMAGE" 2>/dev/null)
if [ "$have" != "$RECIPE" ]; then
	old=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null)
	say "importing $IMAGE from /bin/busybox"
	dir=$(mktemp -d) || fail "mktemp"
	trap 'rm -rf "$dir"' EXIT
	root="$dir/rootfs"
	mkdir -p "$root/bin" "$root/usr/bin" "$root/etc" "$root/tmp" "$root/workspace" "$root/proc" "$root/dev" "$root/sys" ||
		fail "make the rootfs in $dir"
	cp /bin/busybox "$root/bin/busybox" || fail "copy /bin/busybox"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$root/bin/$a" || fail "link applet $a"
	done
	# The container backend starts every command through /usr/bin/env.
	ln -s ../../bin/busybox "$root/usr/bin/env" || fail "link /usr/bin/env"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	chmod 1777 "$root/tmp"
	tar -C "$root" -cf "$dir/rootfs.tar" . || fail "tar the rootfs"
	podman import -q --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/bin' --change "LABEL airlock.recipe=$RECIPE" \
		"$dir/rootfs.tar" "$IMAGE" >/dev/null ||
		fail "podman import $IMAGE"
	# The image this one replaces, now untagged.
	[ -z "$old" ] || podman rmi "$old" >/dev/null 2>&1 || true
fi
podman run --rm --network none "$IMAGE" true || fail "a test container does not run: podman run --rm $IMAGE true"
say "ready: bwrap $(bwrap --version | cut -d' ' -f2), podman $(podman --version | cut -d' ' -f3), API on $SOCK, image $IMAGE"
