//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	// binary is the switchboard binary, built once.
	binary string
	// pg is the suite's private Postgres cluster; each scenario has its
	// own database on it.
	pg *pgCluster
	// logDir holds every node's log, every worker's output and the
	// server's log. It is removed after a passing run unless
	// CHAOS_KEEP_LOGS is set, and kept (and named) after a failing one.
	logDir string
)

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "worker" {
		os.Exit(workerMain())
	}
	os.Exit(suite(m))
}

func suite(m *testing.M) int {
	ctx := context.Background()
	var err error
	if logDir, err = os.MkdirTemp("", "chaos-logs-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	binary = filepath.Join(logDir, "switchboard")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "../../cmd/switchboard")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build switchboard:", err)
		return 2
	}
	began := time.Now()
	if pg, err = startCluster(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "private postgres:", err)
		return 2
	}
	fmt.Printf("chaos: private postgres on 127.0.0.1:%d (%s) up in %s; logs in %s\n", pg.Port(), pg.Dir(), time.Since(began).Round(time.Millisecond), logDir)
	code := m.Run()
	pg.stop()
	writeReport()
	switch {
	case code != 0:
		fmt.Printf("chaos: failed; node, worker and postgres logs kept in %s\n", logDir)
	case os.Getenv("CHAOS_KEEP_LOGS") != "":
		fmt.Printf("chaos: node, worker and postgres logs kept in %s\n", logDir)
	default:
		_ = os.RemoveAll(logDir)
	}
	return code
}

// row is one line of the report.
type row struct {
	scenario      string
	todos         int64
	lost, double  int64 // from the database
	sdkDouble     int64 // todos two OnAcks reported Completed
	redelivered   int64 // todos claimed more than once
	extraAttempts int64 // claims beyond the first
	retried       int64 // SDK acks retried
	abandoned     int64 // SDK acks given up (Unconfirmed)
	leaseLost     int64
	took          time.Duration
	events        []string // each fault and the time until completions resumed
	notes         []string
}

var (
	reportMu sync.Mutex
	report   []row
)

func addRow(t *testing.T, r row) {
	t.Helper()
	reportMu.Lock()
	report = append(report, r)
	reportMu.Unlock()
	t.Log("\n" + renderReport([]row{r}))
}

func renderReport(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %7s %5s %7s %10s %12s %10s %12s %10s %10s %8s\n",
		"scenario", "todos", "lost", "double", "sdk-double", "redelivered", "extra-att", "acks-retried", "abandoned", "lease-lost", "took")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-10s %7d %5d %7d %10d %12d %10d %12d %10d %10d %8s\n",
			r.scenario, r.todos, r.lost, r.double, r.sdkDouble, r.redelivered, r.extraAttempts, r.retried, r.abandoned, r.leaseLost, r.took.Round(100*time.Millisecond))
	}
	for _, r := range rows {
		for _, e := range r.events {
			fmt.Fprintf(&b, "  %s: %s\n", r.scenario, e)
		}
		for _, n := range r.notes {
			fmt.Fprintf(&b, "  %s: %s\n", r.scenario, n)
		}
	}
	return b.String()
}

// writeReport prints the whole report and writes it to CHAOS_REPORT if set.
func writeReport() {
	reportMu.Lock()
	defer reportMu.Unlock()
	if len(report) == 0 {
		return
	}
	s := "chaos report\n" + renderReport(report)
	fmt.Print(s)
	if path := os.Getenv("CHAOS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "CHAOS_REPORT:", err)
		}
	}
}
