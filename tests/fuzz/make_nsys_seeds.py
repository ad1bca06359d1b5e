#!/usr/bin/env python3
"""Seed corpora for the nsys fuzzers, from synthetic data only (never ../shared).

  make_nsys_seeds.py IMPORT_DIR ROWS_DIR

IMPORT_DIR (fuzz_nsys_import): small nsys-shaped SQLite exports written with Python's sqlite3 —
the newest schema (globalPid, enum tables, TARGET_INFO_GPU), an old one (two runtime rows per call,
no globalPid, inline NVTX text, TARGET_INFO_CUDA_GPU), an empty export and a no-export database.
512-byte pages keep each file at a few KiB, so mutations hit headers, b-tree pages and records.

ROWS_DIR (fuzz_nsys_rows): the byte encoding that target decodes (see its file comment) for a step
with a launch + kernel pair, a sync, a copy, an NVTX step range and a DataLoader wait.
"""
import os
import sqlite3
import sys
import tempfile

PID, TID = 4242, 4250
GPID = (1 << 48) | (PID << 24)
GTID = GPID | TID
T0 = 1_700_000_000_000_000_000


def write_export(path, old=False, empty=False):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=512")
    db.execute("PRAGMA journal_mode=OFF")
    gpu_cols = "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER, contextId INTEGER, " \
               "streamId INTEGER, correlationId INTEGER" + ("" if old else ", globalPid INTEGER")
    db.executescript(f"""
      CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
        globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({gpu_cols}, demangledName INTEGER, shortName INTEGER,
        mangledName INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY ({gpu_cols}, bytes INTEGER, copyKind INTEGER, srcKind INTEGER,
        dstKind INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET ({gpu_cols}, value INTEGER, bytes INTEGER, memKind INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ({gpu_cols}, syncType INTEGER, eventId INTEGER);
      CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
        category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
        domainId INTEGER);
      CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER, globalTid INTEGER,
        nameId INTEGER, returnValue INTEGER, nestingLevel INTEGER);
    """)
    if old:
        db.execute("CREATE TABLE TARGET_INFO_CUDA_GPU (name TEXT, deviceId INTEGER)")
        db.execute("INSERT INTO TARGET_INFO_CUDA_GPU VALUES ('NVIDIA GeForce GTX 1060', 0)")
    else:
        db.executescript("""
          CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
          INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),
            (1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'), (2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device');
          CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
          INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1,'CUDA_MEMCPY_KIND_HTOD','HtoD'), (2,'CUDA_MEMCPY_KIND_DTOH','DtoH');
          CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, cuDevice INTEGER);
          INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H200', 0);
        """)
    names = ["cudaLaunchKernel_v7000", "cudaStreamSynchronize_v3020", "cudaMemcpyAsync_v3020", "void gemm<float>(int)",
             "gemm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ProfilerStep#3", "read", "DataLoader",
             "cudaLaunchKernel"]
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(names, start=1)))
    if not empty:
        pid = [] if old else [GPID]
        us = lambda x: T0 + x * 1000
        for step in range(2):
            o = step * 10_000
            runtime = [(us(o + 100), us(o + 110), 1, GTID, 10 + step * 10, 1, 0),
                       (us(o + 200), us(o + 210), 1, GTID, 11 + step * 10, 3, 0),
                       (us(o + 300), us(o + 5000), 1, GTID, 12 + step * 10, 2, 0)]
            if old:  # two rows per call, the inner one versioned
                runtime.append((us(o + 101), us(o + 109), 1, GTID, 10 + step * 10, 10, 0))
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?)", runtime)
            db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * (9 + len(pid)))})",
                       [us(o + 150), us(o + 4000), 0, 1, 7, 10 + step * 10, *pid, 4, 5, None])
            db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * (9 + len(pid)))})",
                       [us(o + 4000), us(o + 4800), 0, 1, 13, 12 + step * 10, *pid, 6, 6, None])
            db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ({','.join('?' * (10 + len(pid)))})",
                       [us(o + 250), us(o + 900), 0, 1, 7, 11 + step * 10, *pid, 1 << 20, 1, 0, 2])
            db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES ({','.join('?' * (9 + len(pid)))})",
                       [us(o + 120), us(o + 140), 0, 1, 7, 13 + step * 10, *pid, 0, 64, 2])
            db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES ({','.join('?' * (8 + len(pid)))})",
                       [us(o + 300), us(o + 5000), 0, 1, 7, 12 + step * 10, *pid, 3, 0])
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (us(o), us(o + 9000), 59, None, None, None, "ProfilerStep#%d" % step if old else None, GTID,
                        None, None if old else 7, 0))
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (us(o + 5000), us(o + 8000), 59, None, None, None, None, GTID, None, 9, 0))
            db.execute("INSERT INTO OSRT_API VALUES (?,?,?,?,?,?,?)", (us(o + 5100), us(o + 7900), 0, GTID, 8, 0, 0))
    db.commit()
    db.close()


def write_not_an_export(path):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=512")
    db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    db.execute("INSERT INTO t VALUES (1, 'x')")
    db.commit()
    db.close()


def rows_seed():
    """fuzz_nsys_rows' encoding. Tables (variant 1: with enum tables): 0 StringIds, 1 RUNTIME,
    2 DRIVER, 3 KERNEL, 4 MEMCPY, 5 MEMSET, 6 SYNCHRONIZATION, 7 NVTX_EVENTS, 8 OSRT_API, 9 TARGET_INFO."""
    out = bytearray([1])  # variant: enum tables, globalPid, textId, TARGET_INFO_GPU

    def ts(us_offset):  # tag 3: base + 16-bit µs offset
        return [3, (us_offset >> 8) & 0xFF, us_offset & 0xFF]

    def small(v):
        return [1, v]

    def sid(i):  # tag 5: string id 1 + (byte % 20)
        return [5, i - 1]

    gtid = [17]  # tag 17 (17 % 9 == 8, bit 4 set): the globalTid
    gpid = [8]   # tag 8 (bit 4 clear): the globalPid
    # runtime: start end globalTid correlationId nameId (cudaLaunchKernel, cudaStreamSynchronize)
    out += bytes([1] + ts(100) + ts(110) + gtid + small(10) + sid(1))
    out += bytes([1] + ts(300) + ts(5000) + gtid + small(11) + sid(2))
    # kernel: start end deviceId streamId correlationId globalPid demangled short mangled
    out += bytes([3] + ts(150) + ts(4000) + small(0) + small(7) + small(10) + gpid + sid(5) + sid(5) + [0])
    # memcpy: ... bytes copyKind srcKind dstKind (pageable HtoD)
    out += bytes([4] + ts(200) + ts(900) + small(0) + small(7) + small(12) + gpid + small(200) + small(1) +
                 small(0) + small(2))
    # sync: ... syncType (stream)
    out += bytes([6] + ts(300) + ts(5000) + small(0) + small(7) + small(11) + gpid + small(3))
    # NVTX: start end eventType textId globalTid: the step range, then a DataLoader range
    out += bytes([7] + ts(0) + ts(9000) + small(59) + sid(7) + gtid)
    out += bytes([7] + ts(5000) + ts(8000) + small(59) + sid(8) + gtid)
    # OSRT: start end globalTid nameId (read)
    out += bytes([8] + ts(5100) + ts(7900) + gtid + sid(9))
    return bytes(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import_dir, rows_dir = sys.argv[1], sys.argv[2]
    os.makedirs(import_dir, exist_ok=True)
    os.makedirs(rows_dir, exist_ok=True)
    write_export(os.path.join(import_dir, "seed_new_schema.sqlite"))
    write_export(os.path.join(import_dir, "seed_old_schema.sqlite"), old=True)
    write_export(os.path.join(import_dir, "seed_empty_export.sqlite"), empty=True)
    write_not_an_export(os.path.join(import_dir, "seed_not_an_export.sqlite"))
    with open(os.path.join(rows_dir, "seed_step"), "wb") as f:
        f.write(rows_seed())


if __name__ == "__main__":
    main()
