package trace

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkReadJudge measures parse+judge throughput over a trace in the
// plugin's own format (-xx -y), reported in lines per second.
func BenchmarkReadJudge(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`10  execve("\x2f\x62", ["\x62"], 0x0 /* 1 vars */) = 0` + "\n")
	for i := 0; i < 10000; i++ {
		p := hexQuote(fmt.Sprintf("/usr/lib/python3/dist-packages/m%d/__init__.py", i%500))
		fmt.Fprintf(&buf, "10  openat(-100<%s>, \"%s\", 0x80000) = 3<%s>\n", hexQuote("/ws"), p, p)
		fmt.Fprintf(&buf, "10  newfstatat(3<%s>, \"\", {st_mode=0100644, st_size=1, ...}, 0x1000) = 0\n", p)
	}
	data := buf.Bytes()
	lines := bytes.Count(data, []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := &Judge{Table: allowUnder{"/usr", "/ws"}}
		if rep := j.Read(bytes.NewReader(data)); rep.Error != "" {
			b.Fatal(rep.Error)
		}
	}
	b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
}
