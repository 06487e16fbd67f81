package policy

import (
	"bytes"

	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/tool"
)

// effectiveHeader opens the output of Effective.
const effectiveHeader = "# The effective airlock policy: the built-in tables and rules, then the\n" +
	"# rules of the policy file. Rules are evaluated in this order.\n"

// render writes the effective policy in the built-in file's format, with
// each rule's source added. It runs once, when the policy is compiled.
func (c *compiled) render() []byte {
	roles := mapping(false)
	for _, r := range c.roleOrder {
		v := mapping(true)
		add(v, "max_risk", r.maxRisk.String())
		roles.Content = append(roles.Content, str(r.name), v)
	}
	modes := mapping(false)
	for _, m := range c.modeOrder {
		v := mapping(true)
		for e := tool.EffectRead; e <= tool.EffectExternal; e++ {
			add(v, e.String(), m.byEffect[e].Action.String())
		}
		add(v, "destroy", m.destroy.Action.String())
		modes.Content = append(modes.Content, str(m.name), v)
	}
	rules := &yaml.Node{Kind: yaml.SequenceNode}
	for _, r := range c.rules {
		v := mapping(false)
		add(v, "id", r.id)
		add(v, "source", r.source)
		add(v, "when", r.when)
		add(v, "decision", r.action.String())
		if r.message != "" {
			add(v, "message", r.message)
		}
		if r.hint != "" {
			add(v, "hint", r.hint)
		}
		rules.Content = append(rules.Content, v)
	}

	top := mapping(false)
	top.Content = append(top.Content,
		str("version"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"},
		str("default_mode"), str(c.defaultMode),
		str("roles"), roles,
		str("modes"), modes,
		str("rules"), rules,
	)
	var b bytes.Buffer
	b.WriteString(effectiveHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(top); err != nil {
		// The tree is built above from strings only; encoding it cannot
		// fail. Say so in the output rather than panic.
		return []byte(effectiveHeader + "# the policy could not be written\n{}\n")
	}
	enc.Close()
	return b.Bytes()
}

func mapping(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func add(m *yaml.Node, key, value string) {
	m.Content = append(m.Content, str(key), str(value))
}
