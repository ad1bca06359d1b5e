# Sourced by explore.sh: writes generated seed inputs for every fuzzer under $1/<fuzzer>/ —
# shrunk synthetic traces from stepwatch-synth (never from ../shared), small nsys-shaped exports,
# config lines and HTTP requests. Exploration starts from these plus the committed corpus.
make_fuzz_seeds() {
  local out=$1 synth=$fuzz_bdir/bin/stepwatch-synth tmp
  tmp=$(mktemp -d)
  mkdir -p "$out"/{fuzz_kineto_import,fuzz_analysis,fuzz_live_config,fuzz_metrics_request,fuzz_nsys_import,fuzz_nsys_rows}
  local seeds=$out/fuzz_kineto_import
  for s in gpu_bound ddp_overlap slow_dataloader item_sync pageable_copy serialized_allreduce launch_bound \
           sync_copy slow_h2d allocator_churn no_marks; do
    "$synth" -s "$s" -n 2 -o "$tmp/$s.json" >/dev/null
    python3 "$fuzz_dir/make_seeds.py" "$tmp/$s.json" "$seeds/seed_$s.json" 80
    python3 "$fuzz_dir/make_seeds.py" "$tmp/$s.json" "$seeds/seed_${s}_small.json" 12
  done
  "$synth" -s item_sync -n 1 -o "$tmp/one.json.gz" >/dev/null && cp "$tmp/one.json.gz" "$seeds/seed_gzip.json.gz"
  printf '{"traceEvents":[]}' >"$seeds/seed_empty.json"
  printf '[]' >"$seeds/seed_array.json"
  # The analysis fuzzer decodes 12-byte records: seed it with the same traces' bytes (any bytes are
  # valid input) and a hand-made soup.
  cp "$seeds"/seed_*_small.json "$out/fuzz_analysis/"
  printf '\x06\x00\x00\x00\xff\x7f\x00\x00\x00\x00\x00\x01\x04\x10\x00\x00\x05\x00\x11\x03\x01\x00\x00\x00\x00\x20\x00\x00\x40\x00\x11\x08\x00\x00\x00\x00' \
    >"$out/fuzz_analysis/seed_step_launch_kernel"
  # The config fuzzer reads NAME=VALUE lines.
  local cfg=$out/fuzz_live_config
  printf 'STEPWATCH_ENABLE=1\nSTEPWATCH_FLUSH_MS=200\nSTEPWATCH_MEMORY_MB=64\nSTEPWATCH_SUSTAIN=3/5\nRANK=3\n' >"$cfg/seed_basic"
  printf 'STEPWATCH_STEP_PATTERN=^(ProfilerStep#\\d+|step)$\nSTEPWATCH_DATA_PATTERN=DataLoader\nSTEPWATCH_DISABLE=launch_bound, gc_pause\n' >"$cfg/seed_patterns"
  printf 'STEPWATCH_MIN_PCT=5.5\nSTEPWATCH_MIN_MS=1e3\nSTEPWATCH_CUPTI_BUFFER_KB=4096\nSTEPWATCH_CUPTI_MAX_BUFFERS=64\nSTEPWATCH_LOG_LEVEL=warning\n' >"$cfg/seed_numbers"
  printf 'STEPWATCH_FLUSH_MS=abc\nSTEPWATCH_SUSTAIN=9/2\nSTEPWATCH_STEP_PATTERN=(\nOMPI_COMM_WORLD_RANK=-1\nSLURM_PROCID=7\n' >"$cfg/seed_bad"
  # The metrics endpoint's request parser reads raw HTTP requests.
  printf 'GET /metrics HTTP/1.1\r\nHost: localhost:9400\r\nAccept: */*\r\n\r\n' >"$out/fuzz_metrics_request/seed_get"
  printf 'HEAD /metrics?x=1 HTTP/1.0\n\n' >"$out/fuzz_metrics_request/seed_head"
  # The nsys fuzzers: small nsys-shaped SQLite exports written with python3's sqlite3, and a step in
  # fuzz_nsys_rows' row encoding.
  python3 "$fuzz_dir/make_nsys_seeds.py" "$out/fuzz_nsys_import" "$out/fuzz_nsys_rows"
  rm -rf "$tmp"
}
