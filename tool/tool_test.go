package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func okTool(name string) Tool {
	return Tool{Name: name, Description: "d", Schema: json.RawMessage(`{}`), Risk: RiskLow, Effect: EffectRead,
		Run: func(context.Context, *Call) (Result, error) { return Result{}, nil }}
}

func TestRegister(t *testing.T) {
	r := NewRegistry()
	if err := r.Register(okTool("calculate")); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Tool){
		"duplicate":      func(t *Tool) {},
		"a dot":          func(t *Tool) { t.Name = "fs.read" },
		"a digit first":  func(t *Tool) { t.Name = "1calc" },
		"too long":       func(t *Tool) { t.Name = "a" + strings.Repeat("b", 64) },
		"empty name":     func(t *Tool) { t.Name = "" },
		"no risk":        func(t *Tool) { t.Name, t.Risk = "a", 0 },
		"risk too high":  func(t *Tool) { t.Name, t.Risk = "b", RiskHigh+1 },
		"no effect":      func(t *Tool) { t.Name, t.Effect = "c", 0 },
		"no schema":      func(t *Tool) { t.Name, t.Schema = "d", nil },
		"no executor":    func(t *Tool) { t.Name, t.Run = "e", nil },
		"no description": func(t *Tool) { t.Name, t.Description = "f", " " },
		"unknown class":  func(t *Tool) { t.Name, t.Effect, t.Class = "g", EffectExternal, "teleport" },
		"payment write":  func(t *Tool) { t.Name, t.Effect, t.Class = "h", EffectWrite, ClassPayment },
	}
	for name, mutate := range bad {
		tl := okTool("calculate")
		mutate(&tl)
		if err := r.Register(tl); err == nil {
			t.Errorf("%s: Register accepted %+v", name, tl)
		}
	}
	// Upstream MCP tools keep their names: any case, - and _.
	for _, name := range []string{"everything__get-sum", "mem__createEntities", "A" + strings.Repeat("b", 63)} {
		if err := NewRegistry().Register(okTool(name)); err != nil {
			t.Error(err)
		}
	}
	pay := okTool("pay")
	pay.Effect, pay.Class = EffectExternal, ClassPayment
	if err := r.Register(pay); err != nil {
		t.Errorf("a payment tool with an external effect: %v", err)
	}
	r.Register(okTool("alpha"))
	var names []string
	for _, tl := range r.List() {
		names = append(names, tl.Name)
	}
	if got := len(names); got != 3 || names[0] != "alpha" || names[1] != "calculate" || names[2] != "pay" {
		t.Errorf("List = %v, want [alpha calculate pay]", names)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Error("Lookup found an unregistered tool")
	}
}

func TestNames(t *testing.T) {
	for _, r := range []Risk{RiskLow, RiskMedium, RiskHigh} {
		if got, err := ParseRisk(r.String()); err != nil || got != r {
			t.Errorf("ParseRisk(%q) = %v, %v", r, got, err)
		}
	}
	for _, e := range []Effect{EffectRead, EffectWrite, EffectExternal} {
		if got, err := ParseEffect(e.String()); err != nil || got != e {
			t.Errorf("ParseEffect(%q) = %v, %v", e, got, err)
		}
	}
	if _, err := ParseRisk("extreme"); err == nil {
		t.Error("ParseRisk accepted an unknown name")
	}
	if Risk(0).String() != "Risk(0)" || Effect(9).String() != "Effect(9)" {
		t.Error("invalid values print their number")
	}
}

func TestErrorIs(t *testing.T) {
	var err error = Errorf(CodeNotFound, "hint", "no %s", "file")
	if !errors.Is(err, &Error{Code: CodeNotFound}) || errors.Is(err, &Error{Code: CodeDenied}) {
		t.Errorf("errors.Is by code fails for %v", err)
	}
	if err.Error() != "not_found: no file" {
		t.Errorf("Error() = %q", err.Error())
	}
}
