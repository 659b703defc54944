# serve-fresh.sh: sourced by the measurement scripts, not run.
#
# It defines serve_fresh and await_serving.
#
# serve_fresh BINARY OUT [SERVE FLAGS...] starts `BINARY serve` on a new
# embedded store in OUT/data on a free port of 127.0.0.1, with SERVER_ENV
# (VAR=value words) in its environment, SERVER_FLAGS (words) after the
# flags given and SERVER_PREFIX (words, e.g. "taskset -c 0") before it; its stdout and log go to OUT/server.out and OUT/server.log.
# It sets $server to the server's PID, arranges for the server to be
# stopped when the script exits, and returns once the server serves (or
# exits the script if it does not within 30 s).
serve_fresh() {
	local bin=$1 out=$2
	shift 2
	rm -rf "$out/data"
	mkdir -p "$out/data"
	# shellcheck disable=SC2086 # SERVER_ENV, SERVER_PREFIX and SERVER_FLAGS are lists of words
	env ${SERVER_ENV:-} ${SERVER_PREFIX:-} "$bin" serve --data-dir "$out/data" --secure-port 0 "$@" ${SERVER_FLAGS:-} >"$out/server.out" 2>"$out/server.log" &
	server=$!
	trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
	await_serving "$out/server.log" "leasehold serve"
}

# await_serving LOG WHAT returns once the JSON log LOG says "serving", or
# exits the script if it does not within 30 s.
await_serving() {
	for _ in $(seq 1 150); do
		grep -q '"msg":"serving"' "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	echo "$2 did not start; see $1" >&2
	exit 1
}
