package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/tool"
)

// Limits of the FAQ tool.
const (
	MaxFAQEntries     = 1000     // keys in one index
	MaxFAQAnswerBytes = 64 << 10 // bytes of one answer file
)

var faqKeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// FAQIndex is the approved list of keys: each key names one answer file,
// relative to the index file, and a source id that results carry.
//
//	entries:
//	  - key: refunds
//	    file: answers/refunds.md
//	    source: policy-handbook-v3
type FAQIndex struct {
	Entries []FAQEntry `yaml:"entries"`
}

// FAQEntry is one approved key.
type FAQEntry struct {
	Key    string `yaml:"key"`
	File   string `yaml:"file"`
	Source string `yaml:"source"`
}

// LoadFAQ reads an index and every answer it names, so that a lookup does
// no I/O and answers only what was approved when airlock started.
func LoadFAQ(indexPath string) (tool.Tool, error) {
	data, err := os.ReadFile(indexPath)
	if err != nil {
		return tool.Tool{}, fmt.Errorf("faq index: %w", err)
	}
	var idx FAQIndex
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&idx); err != nil {
		return tool.Tool{}, fmt.Errorf("faq index %s: %w", indexPath, err)
	}
	if len(idx.Entries) > MaxFAQEntries {
		return tool.Tool{}, fmt.Errorf("faq index %s: %d entries, the limit is MaxFAQEntries = %d", indexPath, len(idx.Entries), MaxFAQEntries)
	}
	base := filepath.Dir(indexPath)
	answers := map[string]faqAnswer{}
	var keys []string
	for i, e := range idx.Entries {
		switch {
		case !faqKeyPattern.MatchString(e.Key):
			return tool.Tool{}, fmt.Errorf("faq index %s: entry %d: key %q must match %s", indexPath, i+1, e.Key, faqKeyPattern)
		case answers[e.Key].source != "":
			return tool.Tool{}, fmt.Errorf("faq index %s: key %q appears twice", indexPath, e.Key)
		case e.Source == "":
			return tool.Tool{}, fmt.Errorf("faq index %s: key %q has no source id", indexPath, e.Key)
		case !filepath.IsLocal(e.File):
			return tool.Tool{}, fmt.Errorf("faq index %s: key %q: file %q must be a relative path below the index", indexPath, e.Key, e.File)
		}
		body, err := os.ReadFile(filepath.Join(base, e.File))
		if err != nil {
			return tool.Tool{}, fmt.Errorf("faq index %s: key %q: %w", indexPath, e.Key, err)
		}
		if len(body) > MaxFAQAnswerBytes {
			return tool.Tool{}, fmt.Errorf("faq index %s: key %q: answer has %d bytes, the limit is MaxFAQAnswerBytes = %d", indexPath, e.Key, len(body), MaxFAQAnswerBytes)
		}
		answers[e.Key] = faqAnswer{text: string(body), source: e.Source}
		keys = append(keys, e.Key)
	}
	slices.Sort(keys)
	return faqTool(answers, keys), nil
}

type faqAnswer struct{ text, source string }

// faqTool builds the tool. The schema's enum is the approved key list, so a
// key that was not approved is refused before the executor is reached.
func faqTool(answers map[string]faqAnswer, keys []string) tool.Tool {
	key := map[string]any{"type": "string", "maxLength": 64, "description": "One of the approved keys."}
	if len(keys) > 0 {
		key["enum"] = keys
	}
	schema, _ := json.Marshal(map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"key"},
		"properties":           map[string]any{"key": key},
	})
	return tool.Tool{
		Name: "faq_lookup",
		Description: "Look up the approved answer for a key. Only the listed keys exist; the answer carries " +
			"the id of its source, which you should cite.",
		Schema: schema,
		Risk:   tool.RiskLow,
		Effect: tool.EffectRead,
		Run: func(ctx context.Context, call *tool.Call) (tool.Result, error) {
			var args struct {
				Key string `json:"key"`
			}
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return tool.Result{}, err
			}
			a, ok := answers[args.Key]
			if !ok {
				return tool.Fail(tool.CodeUnknownKey, fmt.Sprintf("no approved answer for %q", args.Key),
					"Use one of the approved keys listed in the tool's schema"), nil
			}
			return tool.Result{Content: a.text, Provenance: tool.Provenance{Tool: "faq_lookup", Source: "faq:" + a.source}}, nil
		},
	}
}
