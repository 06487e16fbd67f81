package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// PicoUSD is an amount of money in 1e-12 US dollars. A price written in
// USD per million tokens with up to six decimals is a whole number of
// PicoUSD per token, so every cost is an exact integer: money is never a
// float here.
type PicoUSD int64

// PriceDecimals is the most decimals a price (USD per million tokens) may
// have: the resolution of PicoUSD per token.
const PriceDecimals = 6

// String writes the amount in dollars with as many decimals as it needs,
// as in "0.0125" or "3".
func (p PicoUSD) String() string {
	neg := p < 0
	u := uint64(p)
	if neg {
		u = -u
	}
	whole, frac := u/1e12, u%1e12
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%012d", frac), "0")
		s += "." + f
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Price is what one token costs, in and out.
type Price struct {
	Input  PicoUSD `json:"input"`  // per input token
	Output PicoUSD `json:"output"` // per output token
}

// Cost is what usage costs at this price. It fails, rather than wrap,
// when the amount does not fit (over about nine million dollars).
func (p Price) Cost(u Usage) (PicoUSD, error) {
	in, err := mulTokens(u.InputTokens, p.Input)
	if err != nil {
		return 0, err
	}
	out, err := mulTokens(u.OutputTokens, p.Output)
	if err != nil {
		return 0, err
	}
	sum, carry := bits.Add64(uint64(in), uint64(out), 0)
	if carry != 0 || sum > math.MaxInt64 {
		return 0, errCostOverflow
	}
	return PicoUSD(sum), nil
}

var errCostOverflow = errors.New("model: the cost does not fit in PicoUSD")

func mulTokens(n int64, per PicoUSD) (PicoUSD, error) {
	if n < 0 || per < 0 {
		return 0, errors.New("model: negative tokens or price")
	}
	hi, lo := bits.Mul64(uint64(n), uint64(per))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, errCostOverflow
	}
	return PicoUSD(lo), nil
}

// PriceTable maps model names to prices. Lookup also finds a dated
// snapshot of a listed model ("gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929").
type PriceTable map[string]Price

// perMillion builds a Price from USD per million tokens written as exact
// decimals; it is only used on the constant table below.
func perMillion(in, out string) Price {
	pi, err1 := parseUSDPerMillion(in)
	po, err2 := parseUSDPerMillion(out)
	if err1 != nil || err2 != nil {
		panic("model: bad price in the built-in table")
	}
	return Price{Input: pi, Output: po}
}

// defaultPrices are list prices in USD per million tokens (input, output)
// as the providers published them for standard, uncached use in 2025.
// They change: check them before relying on a cost, and override with
// PriceTable.Set("MODEL=IN,OUT").
var defaultPrices = PriceTable{
	"gpt-4o":            perMillion("2.50", "10.00"),
	"gpt-4o-mini":       perMillion("0.15", "0.60"),
	"gpt-4.1":           perMillion("2.00", "8.00"),
	"gpt-4.1-mini":      perMillion("0.40", "1.60"),
	"gpt-4.1-nano":      perMillion("0.10", "0.40"),
	"o3":                perMillion("2.00", "8.00"),
	"o4-mini":           perMillion("1.10", "4.40"),
	"gpt-5":             perMillion("1.25", "10.00"),
	"gpt-5-mini":        perMillion("0.25", "2.00"),
	"gpt-5-nano":        perMillion("0.05", "0.40"),
	"claude-opus-4-1":   perMillion("15.00", "75.00"),
	"claude-opus-4":     perMillion("15.00", "75.00"),
	"claude-sonnet-4-5": perMillion("3.00", "15.00"),
	"claude-sonnet-4":   perMillion("3.00", "15.00"),
	"claude-haiku-4-5":  perMillion("1.00", "5.00"),
	"claude-3-5-haiku":  perMillion("0.80", "4.00"),
	"claude-3-haiku":    perMillion("0.25", "1.25"),
}

// DefaultPrices returns a copy of the built-in table.
func DefaultPrices() PriceTable { return maps.Clone(defaultPrices) }

// Lookup returns the price of model: an exact entry, else the entry the
// name is a dated snapshot or "-latest" alias of.
func (t PriceTable) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	for i := len(model) - 1; i > 0; i-- {
		if model[i] == '-' && isSnapshotSuffix(model[i+1:]) {
			if p, ok := t[model[:i]]; ok {
				return p, true
			}
		}
	}
	return Price{}, false
}

// isSnapshotSuffix reports whether s is a date (20250929, 2024-08-06) or
// "latest": the suffixes providers put on snapshots of one model.
func isSnapshotSuffix(s string) bool {
	if s == "latest" {
		return true
	}
	digits := strings.ReplaceAll(s, "-", "")
	if len(digits) != 8 || (len(s) != 8 && len(s) != 10) {
		return false
	}
	if len(s) == 10 && (s[4] != '-' || s[7] != '-') {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Cost prices usage for model; ok is false when the model is not listed.
func (t PriceTable) Cost(model string, u Usage) (cost PicoUSD, ok bool, err error) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false, nil
	}
	cost, err = p.Cost(u)
	return cost, true, err
}

// MaxPriceOverride is the longest MODEL=IN,OUT text Set accepts.
const MaxPriceOverride = 512

// Set applies one override written MODEL=IN,OUT, in USD per million
// tokens, as in "gpt-4o=2.50,10" or "llama3.2:3b=0,0".
func (t PriceTable) Set(override string) error {
	name, p, err := ParsePriceOverride(override)
	if err != nil {
		return err
	}
	t[name] = p
	return nil
}

// ParsePriceOverride parses MODEL=IN,OUT. The model name is everything
// before the last '='; IN and OUT are non-negative decimals with at most
// PriceDecimals decimals.
func ParsePriceOverride(s string) (string, Price, error) {
	if len(s) > MaxPriceOverride {
		return "", Price{}, priceError("the price override is %d bytes, over the limit of %d (MaxPriceOverride)", len(s), MaxPriceOverride)
	}
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return "", Price{}, priceError("%q has no '=' between model and prices", s)
	}
	name, prices := s[:i], s[i+1:]
	if err := checkModelName(name); err != nil {
		return "", Price{}, priceError("model name %q: %v", name, err)
	}
	in, out, ok := strings.Cut(prices, ",")
	if !ok {
		return "", Price{}, priceError("%q has no ',' between input and output price", prices)
	}
	pi, err := parseUSDPerMillion(in)
	if err != nil {
		return "", Price{}, priceError("input price %q: %v", in, err)
	}
	po, err := parseUSDPerMillion(out)
	if err != nil {
		return "", Price{}, priceError("output price %q: %v", out, err)
	}
	return name, Price{Input: pi, Output: po}, nil
}

func priceError(format string, args ...any) *Error {
	e := newError(CodeInvalidRequest, nil, format, args...)
	e.Hint = "Write a price override as MODEL=IN,OUT in USD per million tokens, as in gpt-4o=2.50,10.00"
	return e
}

// maxPriceUSD bounds a price per million tokens, so that a typo does not
// become a cost that overflows; no model costs near this.
const maxPriceUSD = 1_000_000

// parseUSDPerMillion parses a decimal number of USD per million tokens
// into PicoUSD per token: the same digits, six decimals to the right.
func parseUSDPerMillion(s string) (PicoUSD, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, errors.New("it is empty")
	}
	if len(frac) > PriceDecimals {
		return 0, fmt.Errorf("it has more than %d decimals", PriceDecimals)
	}
	if strings.Contains(s, ".") && frac == "" {
		return 0, errors.New("it ends in '.'")
	}
	for _, part := range []string{whole, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return 0, errors.New("it is not a plain non-negative decimal number")
			}
		}
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || w > maxPriceUSD {
		return 0, fmt.Errorf("it is over %d USD per million tokens", maxPriceUSD)
	}
	f := uint64(0)
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", PriceDecimals-len(frac)), 10, 64)
	}
	return PicoUSD(w*1_000_000 + f), nil
}

// ParseUSD parses an amount of US dollars written as a plain decimal
// number with at most six decimals, such as "0.50", up to 1,000,000 (a
// budget, as airlock run's --budget-usd takes it).
func ParseUSD(s string) (PicoUSD, error) {
	// The same digits as a price per million tokens, read as millionths.
	micro, err := parseUSDPerMillion(s)
	if err != nil {
		e := newError(CodeInvalidRequest, nil, "the amount %q: %v", s, err)
		e.Hint = "Write dollars as a plain decimal number with at most six decimals, such as 0.50"
		return 0, e
	}
	return micro * 1_000_000, nil
}
