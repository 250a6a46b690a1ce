package system_test

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// machineCPU is the CPU time this machine has spent busy (every process, the
// load generator's own included) since it booted, from /proc/stat; false
// where there is no /proc. The benchmarks drive a stack on this machine, so
// the busy time over a timed run divided by its operations is what one
// operation costs the whole machine: steadier than a rate on a shared machine
// whose speed varies from minute to minute.
func machineCPU() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, false
	}
	// user nice system idle iowait irq softirq [steal ...]: busy is all but
	// idle and iowait; steal is time another machine had, not this one.
	var busy int64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 || i >= 7 {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	// The kernel counts in USER_HZ, 100 a second on every Linux it builds for.
	return time.Duration(busy) * 10 * time.Millisecond, true
}

// cpuMeter measures the machine's busy CPU over a timed run.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPUMeter() cpuMeter {
	d, ok := machineCPU()
	return cpuMeter{start: d, ok: ok}
}

// perOp is the machine's busy CPU since the meter started, in milliseconds
// an operation; false without /proc.
func (m cpuMeter) perOp(ops int64) (float64, bool) {
	end, ok := machineCPU()
	if !m.ok || !ok || ops < 1 {
		return 0, false
	}
	return float64(end-m.start) / float64(time.Millisecond) / float64(ops), true
}
