package dashboard_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// procMem is a process's memory from /proc: resident and proportional set
// sizes (PSS shares pages mapped by several processes among them).
type procMem struct {
	pid      int
	rss, pss int64 // bytes
}

// memOf reads /proc/PID/smaps_rollup.
func memOf(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return procMem{}, fmt.Errorf("memory of %d: %w", pid, err)
	}
	m := procMem{pid: pid}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:":
			m.rss = kb << 10
		case "Pss:":
			m.pss = kb << 10
		}
	}
	return m, nil
}

// renderers are the Chromium renderer processes under the browser process
// root (they are children of its zygote, not of root itself).
func renderers(root int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat, err := readStat(pid); err == nil {
			parent[pid] = stat.ppid
		}
	}
	var out []int
	for pid := range parent {
		under := false
		for p, hops := parent[pid], 0; p > 1 && hops < 10; p, hops = parent[p], hops+1 {
			if p == root {
				under = true
				break
			}
		}
		if !under {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if bytes.Contains(cmdline, []byte("--type=renderer")) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// renderersCPU is the CPU time of the renderers under root.
func renderersCPU(root int) time.Duration {
	var sum time.Duration
	for _, pid := range renderers(root) {
		if s, err := readStat(pid); err == nil {
			sum += s.cpu
		}
	}
	return sum
}

// procStat is what the test reads of /proc/PID/stat.
type procStat struct {
	ppid int
	cpu  time.Duration // user + system
}

// readStat reads /proc/PID/stat; its times are in USER_HZ, 100 a second
// on Linux whatever the kernel's own tick.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may hold spaces: fields after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, _ := strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return procStat{ppid: ppid, cpu: time.Duration(utime+stime) * 10 * time.Millisecond}, nil
}

// peakRSS is VmHWM from /proc/PID/status.
func peakRSS(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// percentile is the p-th percentile (nearest rank) of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
