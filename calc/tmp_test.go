package calc

import "testing"

func BenchmarkTmpParseOnly(b *testing.B) {
	sets := loadBench(b)
	for _, name := range []string{"all", "typical", "chain50", "nest20", "medium"} {
		exprs := sets[name]
		b.Run(name, func(b *testing.B) {
			cfg := configure(nil)
			ops := make([]op, 0, 600)
			for i := 0; b.Loop(); i++ {
				ops, _ = parse(exprs[i%len(exprs)], &cfg, ops[:0], nil)
			}
		})
	}
}
