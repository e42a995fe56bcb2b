# Docker, for the container-bot, compose and swarm tests (tests/test_docker_*.py): Debian's docker.io
# (its /usr/bin/docker has the classic builder; a newer CLI elsewhere on PATH may lack buildx),
# docker-compose 1.29, debootstrap (bot and service images start from a Debian base made here:
# no image registry is reachable) and iptables (the sandbox drops bot traffic to the host).
# There is no systemd: when no dockerd answers, this starts one in the background, logging to
# /var/log/dockerd.log, and leaves it running (its pid in /run/docker.pid; stop it by that pid).
# The base image itself is built on first use by the tests (docker/base-image.sh), cached by content.
need_pkgs docker.io docker-compose debootstrap iptables ca-certificates

if ! timeout 10 /usr/bin/docker info >/dev/null 2>&1; then
  echo "setup: starting dockerd (log: /var/log/dockerd.log)"
  # --no-new-privileges: stacks ignore security_opt, so swarm services get it from the daemon
  # (docs/deploy.md). start_service (scripts/setup.sh): its own session, no inherited descriptor.
  start_service /var/log/dockerd.log /usr/sbin/dockerd --no-new-privileges
  for _i in $(seq 1 60); do
    timeout 5 /usr/bin/docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  timeout 10 /usr/bin/docker info >/dev/null 2>&1 || { echo "setup: dockerd did not start; see /var/log/dockerd.log" >&2; tail -20 /var/log/dockerd.log >&2; exit 1; }
fi
