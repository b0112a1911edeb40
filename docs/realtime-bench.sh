#!/usr/bin/env bash
# Reproduces issue 27's findings for one voxhost binary: the server pinned
# to one core (GOMAXPROCS=1, taskset -c 1), the load generator on the other.
# Usage: docs/realtime-bench.sh BINARY [surge|noisy|faults|capacity]...
# Figures depend on the machine: compare two binaries in one run, e.g.
#   docs/realtime-bench.sh /tmp/voxhost-old surge; docs/realtime-bench.sh bin/voxhost surge
# LOADGEN=ANOTHER_BINARY drives BINARY's server with another build's load
# generator (an old server, today's generator).
set -euo pipefail
bin=$1; shift
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
here=$(cd "$(dirname "$0")/.." && pwd)
cp "$here/host/server/testdata/spin_frame.wasm" "$here/host/plugin/testdata/recursion.wasm" "$dir/"
port=18180
cat > "$dir/voxhost.yaml" <<YAML
listen: 127.0.0.1:$port
cache_dir: "-"
default_pipeline: main
pipelines:
  main: [{plugin: vad}, {plugin: dtmf}, {plugin: gate}, {plugin: agc}]
  heavy: # ~16 ms of CPU a frame, inside a raised budget
    - {plugin: $dir/spin_frame.wasm, budget_ms: 50}
    - {plugin: $dir/spin_frame.wasm, budget_ms: 50}
    - {plugin: $dir/spin_frame.wasm, budget_ms: 50}
    - {plugin: $dir/spin_frame.wasm, budget_ms: 50}
  faulty: [{plugin: $dir/recursion.wasm}, {plugin: passthrough}]
YAML
url=ws://127.0.0.1:$port
loadgen() { taskset -c 0 "${LOADGEN:-$bin}" loadgen --url "$url" "$@"; }
serve() {
	GOMAXPROCS=1 taskset -c 1 "$bin" --log-level error serve --config "$dir/voxhost.yaml" >"$dir/serve.log" 2>&1 &
	server=$!
	until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
		kill -0 "$server" 2>/dev/null || { cat "$dir/serve.log"; exit 1; }
		sleep 0.1
	done
}
stop() { kill -INT "$server"; wait "$server" || true; }
peak_rss() { awk '/VmHWM/ {print $2/1024 " MiB peak RSS"}' "/proc/$server/status"; }
for what in "$@"; do
	echo "== $what ($bin)"
	serve
	case $what in
	surge) # 3× what one core serves on time (about 480 here), at once
		loadgen --calls ${SURGE:-1440} --ramp 100ms --duration ${SECONDS_OF_AUDIO:-10}s ;;
	noisy) # one healthy paced call, then 10 calls at ~16 ms a frame beside it
		loadgen --calls 1 --duration 12s >"$dir/healthy.txt" &
		bg=$!
		sleep 1
		loadgen --pipeline heavy --calls 10 --ramp 500ms --duration 10s | sed 's/^/heavy: /'
		wait $bg || true
		cat "$dir/healthy.txt" ;;
	faults) # 50 calls whose plugin recurses until it traps, beside a healthy call
		loadgen --pipeline faulty --calls 50 --ramp 1s --duration 12s >"$dir/faulty.txt" &
		bg=$!
		sleep 0.5
		loadgen --calls 1 --duration 10s
		wait $bg || true
		peak_rss ;;
	alone) # the healthy call alone, the baseline of noisy and faults
		loadgen --calls 1 --duration 10s ;;
	capacity) # what one core serves without a surge
		loadgen --sweep ${SWEEP:-200,300,400,500,600} --duration 8s --ramp 2s ;;
	esac
	stop
done
