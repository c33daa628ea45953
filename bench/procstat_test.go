package bench

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 150 and 50 ticks: 2s at USER_HZ 100.
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 12 0 1000 2000000 3000 18446744073709551615"
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{"a plain name", "4242 (lockctl)" + tail, 2 * time.Second, false},
		{"a name with spaces and parentheses", "4242 (a) b (c)" + tail, 2 * time.Second, false},
		{"no name", "4242 lockctl S 1", 0, true},
		{"cut short", "4242 (lockctl) S 1 2 3", 0, true},
		{"not a number", "4242 (lockctl) S 1 2 3 0 -1 4194560 100 0 0 0 x 50", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU(tc.stat)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("parseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tlockctl\nVmHWM:\t   20480 kB\nVmRSS:\t   12345 kB\nThreads:\t9\n"
	for _, tc := range []struct {
		name, status, field string
		want                int64
		wantErr             bool
	}{
		{"VmRSS", status, "VmRSS", 12345 << 10, false},
		{"another field", status, "VmHWM", 20480 << 10, false},
		{"a prefix of another field is not it", "VmRSSx:\t1 kB\n", "VmRSS", 0, true},
		{"missing", "Name:\tx\n", "VmRSS", 0, true},
		{"not in kB", "VmRSS:\t12 MB\n", "VmRSS", 0, true},
		{"not a number", "VmRSS:\tx kB\n", "VmRSS", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatusKB(tc.status, tc.field)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("parseStatusKB(%s) = %v, %v; want %v, error %v", tc.field, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseMemory(t *testing.T) {
	status := "Name:\tlockctl\nVmHWM:\t   40960 kB\nVmRSS:\t   30720 kB\nRssAnon:\t   10240 kB\nRssFile:\t   20480 kB\nRssShmem:\t0 kB\n"
	m, err := parseMemory(status)
	if want := (Memory{RSS: 30 << 20, Peak: 40 << 20, Anon: 10 << 20, File: 20 << 20}); err != nil || m != want {
		t.Errorf("parseMemory = %+v, %v; want %+v", m, err, want)
	}
	if _, err := parseMemory("VmRSS:\t1 kB\n"); err == nil {
		t.Error("parseMemory of a status without VmHWM, RssAnon, RssFile: no error")
	}
}

// TestProcReadsThisProcess: the readers work on a real /proc.
func TestProcReadsThisProcess(t *testing.T) {
	spin := time.Now().Add(50 * time.Millisecond) // a few ticks of CPU
	for time.Now().Before(spin) {
		_ = os.Getpid()
	}
	if d, err := ProcCPU(os.Getpid()); err != nil || d <= 0 {
		t.Errorf("ProcCPU(self) = %v, %v; want some CPU time", d, err)
	}
	if m, err := ProcMemory(os.Getpid()); err != nil || m.RSS < 1<<20 || m.Peak < m.RSS || m.Anon+m.File > m.RSS {
		t.Errorf("ProcMemory(self) = %+v, %v; want at least 1 MiB resident, a peak above it and anon+file within it", m, err)
	}
}
