// Command bench prints git-binky's performance tables (make bench). It
// measures; it asserts nothing. Each section builds what it needs in a temp
// folder with its own BINKY_HOME and cleans up after itself.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type section struct {
	name string
	run  func(b *bench) error
}

var sections = []section{
	{"env", benchEnv},
	{"up", benchUp},
	{"hooks", benchHooks},
	{"proxy", benchProxy},
	{"worlds", benchWorlds},
	{"mysql", benchMySQL},
	{"mongodb", benchMongoDB},
}

type bench struct {
	bin  string // folder holding the git-binky binaries
	tmp  string
	runs int
}

func main() {
	var b bench
	var only string
	flag.StringVar(&b.bin, "bin", "bin", "folder with the built git-binky binaries")
	flag.StringVar(&only, "only", "", "comma-separated sections to run ("+names()+")")
	flag.IntVar(&b.runs, "runs", 200, "repetitions per timed command")
	// The mongodb section's seed command: bench loads documents itself.
	loadMongo := flag.String("load-mongo", "", "load -load-docs documents into this mongodb:// URL's database and exit")
	loadN := flag.Int("load-docs", 0, "documents for -load-mongo")
	flag.Parse()
	if *loadMongo != "" {
		if err := loadDocs(*loadMongo, *loadN); err != nil {
			fail(err)
		}
		return
	}
	abs, err := filepath.Abs(b.bin)
	if err != nil {
		fail(err)
	}
	b.bin = abs
	if _, err := os.Stat(filepath.Join(b.bin, "git-binky")); err != nil {
		fail(fmt.Errorf("no git-binky in %s: run 'make build' first", b.bin))
	}
	b.tmp, err = os.MkdirTemp("", "binky-bench")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(b.tmp)
	for _, s := range sections {
		if only != "" && !strings.Contains(","+only+",", ","+s.name+",") {
			continue
		}
		fmt.Printf("\n## %s\n\n", s.name)
		if err := s.run(&b); err != nil {
			fmt.Printf("section %s failed: %v\n", s.name, err)
		}
	}
}

func names() string {
	var n []string
	for _, s := range sections {
		n = append(n, s.name)
	}
	return strings.Join(n, ",")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// stats summarises durations.
type stats struct {
	n                   int
	p50, p90, p99, mean time.Duration
}

func summarise(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return stats{n: len(s), p50: at(0.50), p90: at(0.90), p99: at(0.99), mean: sum / time.Duration(len(s))}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// table prints a Markdown table.
func table(header []string, rows [][]string) {
	fmt.Println("| " + strings.Join(header, " | ") + " |")
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	fmt.Println("| " + strings.Join(sep, " | ") + " |")
	for _, r := range rows {
		fmt.Println("| " + strings.Join(r, " | ") + " |")
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
