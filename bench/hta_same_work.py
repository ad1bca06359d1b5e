"""What `stepwatch analyze` does, done with Holistic Trace Analysis: load one Kineto trace, then
the comm/comp overlap, the temporal breakdown and the idle-time breakdown (bench/compare_hta.sh).

    python hta_same_work.py TRACE.json.gz
Prints one line: the rank count, the overlap and the idle share, so a run that silently did less
work would show.
"""
import logging
import os
import sys


def main() -> int:
    path = os.path.abspath(sys.argv[1])
    logging.disable(logging.WARNING)  # HTA logs a warning per missing optional field
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_files={0: path}, trace_dir=os.path.dirname(path))
    overlap = analyzer.get_comm_comp_overlap(visualize=False)
    temporal = analyzer.get_temporal_breakdown(visualize=False)
    idle = analyzer.get_idle_time_breakdown(ranks=[0], visualize=False)[0]
    print(f"ranks={len(analyzer.t.traces)} overlap_rows={len(overlap)} "
          f"idle_pctg={float(temporal['idle_time_pctg'].iloc[0]):.2f} idle_rows={len(idle)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
