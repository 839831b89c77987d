package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadFile applies the YAML config file at path to c.
func loadFile(c *Config, path string) []error {
	data, err := os.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("reading config file: %w", err)}
	}
	return applyYAML(c, "config file "+path, data)
}

// applyYAML applies a YAML document of nested mappings matching the dotted
// keys. It walks yaml.Node rather than decoding into a struct so that an
// unknown key is reported with its full dotted name, and so that every value
// reaches the same parser as env and flag values do. src prefixes errors.
func applyYAML(c *Config, src string, data []byte) []error {
	root, err := decodeYAML(data)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", src, err)}
	}
	if root == nil {
		return nil
	}
	var errs []error
	seen := map[string]int{} // key -> line of first definition
	var walk func(m *yaml.Node, section string)
	walk = func(m *yaml.Node, section string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			kn, vn := resolveAlias(m.Content[i]), resolveAlias(m.Content[i+1])
			if kn.Kind != yaml.ScalarNode {
				errs = append(errs, fmt.Errorf("%s: line %d: a key must be a plain string, got %s", src, kn.Line, kindName(kn)))
				continue
			}
			key := kn.Value
			if section != "" {
				key = section + "." + key
			}
			// yaml.v3 does not reject duplicate keys in a Node; two values
			// for one key is a mistake whichever would win.
			if line, dup := seen[key]; dup {
				errs = append(errs, fmt.Errorf("%s: duplicate key %q (line %d, first at line %d)", src, key, kn.Line, line))
				continue
			}
			seen[key] = kn.Line

			s := settingByKey[key]
			switch {
			case section == "" && sections[key]:
				switch {
				case vn.Kind == yaml.MappingNode:
					walk(vn, key)
				case isNull(vn):
					// "redis:" with nothing under it sets nothing.
				default:
					errs = append(errs, fmt.Errorf("%s: %s (line %d): want a mapping of settings, got %s", src, key, vn.Line, kindName(vn)))
				}
			case s == nil:
				errs = append(errs, fmt.Errorf("%s: unknown key %q (line %d)", src, key, kn.Line))
			case vn.Kind != yaml.ScalarNode:
				errs = append(errs, fmt.Errorf("%s: %s (line %d): want a single value, got %s", src, key, vn.Line, kindName(vn)))
			case isNull(vn):
				// Not a way to ask for the default: that is leaving the key out.
				errs = append(errs, fmt.Errorf("%s: %s (line %d): no value given; remove the key to use the default", src, key, vn.Line))
			default:
				if err := s.apply(c, vn.Value); err != nil {
					errs = append(errs, fmt.Errorf("%s: %s (line %d): %w", src, key, vn.Line, err))
				}
			}
		}
	}
	walk(root, "")
	return errs
}

// decodeYAML returns the top-level mapping of a single-document file, or nil
// for a file that holds no settings at all.
func decodeYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, errors.New("more than one YAML document")
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := resolveAlias(doc.Content[0])
	switch {
	case isNull(root):
		return nil, nil
	case root.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("want a mapping of settings at the top level, got %s", kindName(root))
	}
	return root, nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	default:
		return "an unsupported node"
	}
}

// WriteYAML writes the effective configuration as YAML, every key present
// and secrets redacted. Loading the output gives back c.Redacted().
func (c Config) WriteYAML(w io.Writer) error {
	r := c.Redacted()
	return writeTree(w, &r, "# Effective lock-reaper configuration. Secrets are redacted.", nil)
}

// writeExample writes config.yaml.example: every key at its default, each
// documented, grouped.
func writeExample(w io.Writer) error {
	c := Default()
	return writeTree(w, &c, exampleHeader, exampleComment)
}

const exampleHeader = `# lock-reaper configuration.
#
# Every key is shown with its default; delete the ones you do not change.
# Precedence, lowest first: defaults, this file (--config PATH or
# REAPER_CONFIG), environment variables, command-line flags. Every
# environment variable NAME may instead be given as NAME_FILE, the path of a
# file holding the value (for secrets). Durations are written like 30s, 2m,
# 1h30m.`

// exampleComment documents one setting in the example file: what it means,
// then where it can be set.
func exampleComment(s *setting) string {
	def := Default()
	val := s.get(&def)
	if val == "" {
		val = `"" (empty)`
	}
	env := s.env()
	if s.sensitive() {
		env += " or " + s.env() + "_FILE"
	}
	where := fmt.Sprintf("Default: %s. Env: %s. Flag: --%s.", val, env, s.flag())
	return commentLines(s.doc, 76) + "\n" + commentLines(where, 76)
}

// writeTree renders c as nested mappings in table order. comment, when not
// nil, gives each key's comment; group headers come with it.
func writeTree(w io.Writer, c *Config, header string, comment func(*setting) string) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	sectionNodes := map[string]*yaml.Node{}
	group := ""
	for i := range settings {
		s := &settings[i]
		groupHead := ""
		if comment != nil && s.group != group {
			group = s.group
			groupHead = "# " + strings.Repeat("-", 4) + " " + group + " " + strings.Repeat("-", 60-len(group))
		}
		keyNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.leaf()}
		valNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: s.yamlTag, Value: s.get(c)}
		if comment != nil {
			keyNode.HeadComment = comment(s)
		}
		parent := root
		if sec := s.section(); sec != "" {
			if sectionNodes[sec] == nil {
				sectionNodes[sec] = &yaml.Node{Kind: yaml.MappingNode}
				secKey := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sec, HeadComment: groupHead}
				root.Content = append(root.Content, secKey, sectionNodes[sec])
				groupHead = ""
			}
			parent = sectionNodes[sec]
		}
		if groupHead != "" {
			keyNode.HeadComment = groupHead + "\n\n" + keyNode.HeadComment
		}
		parent.Content = append(parent.Content, keyNode, valNode)
	}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encoding YAML: %w", err)
	}
	out := header + "\n\n" + spaceComments(buf.String())
	if _, err := io.WriteString(w, out); err != nil {
		return fmt.Errorf("writing YAML: %w", err)
	}
	return nil
}

// spaceComments puts a blank line before each comment block that follows a
// value, so documented keys read as separate paragraphs.
func spaceComments(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines)+len(lines)/2)
	prevValue := false
	for _, l := range lines {
		isComment := strings.HasPrefix(strings.TrimSpace(l), "#")
		if isComment && prevValue {
			out = append(out, "")
		}
		out = append(out, l)
		// A section key ("redis:") opens its block; its first comment
		// stays right under it.
		trimmed := strings.TrimSpace(l)
		prevValue = !isComment && trimmed != "" && !strings.HasSuffix(trimmed, ":")
	}
	return strings.Join(out, "\n")
}

// commentLines wraps text into "# " lines of at most width characters.
func commentLines(text string, width int) string {
	var lines []string
	line := "#"
	for _, word := range strings.Fields(text) {
		if len(line)+1+len(word) > width && line != "#" {
			lines = append(lines, line)
			line = "#"
		}
		line += " " + word
	}
	lines = append(lines, line)
	return strings.Join(lines, "\n")
}
