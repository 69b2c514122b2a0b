#!/usr/bin/env bash
# Sample the memory of running processes over time.
#
# usage: scripts/sample_rss.sh PIDPATTERN INTERVAL OUT [DURATION]
#   PIDPATTERN  matched against full command lines (pgrep -f), e.g. frozen/privrace-experiment
#   INTERVAL    seconds between samples
#   OUT         file to append to (tab-separated; the header is written when OUT is new):
#               epoch_s  pid  vmrss_kib  vmhwm_kib  command line
#   DURATION    stop after this many seconds (default: run until killed)
#
# Every matching process is sampled each time (a program that restarts under a new pid, one per
# config, shows up as a new pid). The sampler never matches itself. Summarise with
# scripts/rss_summary.py OUT.
set -u
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
pattern=$1 interval=$2 out=$3 duration=${4:-0}
case $interval in ''|*[!0-9.]*) echo "sample_rss.sh: INTERVAL must be a number of seconds" >&2; exit 2;; esac
case $duration in ''|*[!0-9]*) echo "sample_rss.sh: DURATION must be whole seconds" >&2; exit 2;; esac
[ -e "$out" ] || printf 'epoch_s\tpid\tvmrss_kib\tvmhwm_kib\tcmdline\n' > "$out"
start=$(date +%s)
while :; do
    now=$(date +%s)
    if [ "$duration" -gt 0 ] && [ $((now - start)) -ge "$duration" ]; then break; fi
    for pid in $(pgrep -f -- "$pattern"); do
        [ "$pid" = "$$" ] && continue
        cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || continue
        case $cmd in *sample_rss*|'') continue;; esac
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$rss" ] || continue      # the process ended between pgrep and the read
        printf '%s\t%s\t%s\t%s\t%s\n' "$now" "$pid" "$rss" "$hwm" "${cmd% }" >> "$out"
    done
    sleep "$interval"
done
