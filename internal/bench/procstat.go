package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicksPerSecond is USER_HZ, the unit of utime and stime in
// /proc/PID/stat. Linux fixes it at 100 for user space on every architecture
// (the kernel's own HZ may differ; the ABI value does not), and reading it
// through sysconf would need cgo.
const clockTicksPerSecond = 100

// ProcCPUTime returns the CPU time (user + system) a process has used so far,
// from /proc/PID/stat.
func ProcCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	ticks, err := parseStatCPUTicks(data)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// parseStatCPUTicks returns utime+stime from the text of /proc/PID/stat. The
// command name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStatCPUTicks(data []byte) (uint64, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("no ')' closing the command name")
	}
	// After ")": field 3 (state) onwards; utime and stime are fields 14 and 15.
	fields := strings.Fields(string(data[end+1:]))
	const utimeIdx, stimeIdx = 14 - 3, 15 - 3
	if len(fields) <= stimeIdx {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	utime, err := strconv.ParseUint(fields[utimeIdx], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[stimeIdx], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return utime + stime, nil
}

// ProcPeakRSS returns a process's peak resident set size in bytes (VmHWM in
// /proc/PID/status: the high-water mark over the process's whole life).
func ProcPeakRSS(pid int) (uint64, error) { return procStatusKB(pid, "VmHWM") }

// ProcRSS returns a process's resident set size in bytes now (VmRSS).
func ProcRSS(pid int) (uint64, error) { return procStatusKB(pid, "VmRSS") }

func procStatusKB(pid int, key string) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading %s of process %d: %w", key, pid, err)
	}
	defer f.Close()
	v, err := parseStatusKB(f, key)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/%d/status: %w", pid, err)
	}
	return v, nil
}

// parseStatusKB finds "key:   N kB" in /proc/PID/status text and returns N
// in bytes.
func parseStatusKB(r io.Reader, key string) (uint64, error) {
	sc := bufio.NewScanner(r)
	prefix := key + ":"
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", key, line)
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s line", key)
}
