package daemon

import "testing"

func TestParseVMStat(t *testing.T) {
	// As vm_stat prints it on an Apple silicon Mac.
	out := `Mach Virtual Memory Statistics: (page size of 16384 bytes)
Pages free:                                5000.
Pages active:                            200000.
Pages inactive:                          100000.
Pages speculative:                         2000.
Pages throttled:                              0.
Pages wired down:                         90000.
Pages purgeable:                           3000.
"Translation faults":                 123456789.
Pages stored in compressor:               50000.
`
	got, err := parseVMStat([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(5000+100000+2000+3000) * 16384; got != want {
		t.Errorf("available = %d, want %d", got, want)
	}
	for _, bad := range []string{"", "no header\nPages free: 1.\n", "Mach Virtual Memory Statistics: (page size of 4096 bytes)\nPages active: 1.\n", "Mach Virtual Memory Statistics: (page size of 4096 bytes)\nPages free: x.\n"} {
		if _, err := parseVMStat([]byte(bad)); err == nil {
			t.Errorf("parseVMStat(%q) succeeded, want an error", bad)
		}
	}
}
