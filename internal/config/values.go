package config

import (
	"errors"
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// binding ties a setting to its Config field. set parses a textual value and
// assigns it; validate checks the assigned value. They are separate because
// Default and Redacted assign without checking, while Validate checks without
// parsing.
type binding struct {
	kind     string // value kind shown in flag help, e.g. duration
	yamlTag  string // tag WriteYAML gives the value, so 0.5 stays a float
	isBool   bool   // a bare --flag means true
	set      func(c *Config, raw string) error
	get      func(c *Config) string
	validate func(c *Config) error
	// inPass marks a field of Config.Pass (bindPass), which
	// reaper.Config.Validate checks instead of validate.
	inPass bool
}

// codec parses and formats one kind of value.
type codec[T any] struct {
	kind    string
	yamlTag string
	parse   func(string) (T, error)
	format  func(T) string
}

// bind builds the binding of a field from its codec and checks.
func bind[T any](cd codec[T], field func(*Config) *T, checks ...func(T) error) binding {
	return binding{
		kind:    cd.kind,
		yamlTag: cd.yamlTag,
		isBool:  cd.yamlTag == "!!bool",
		set: func(c *Config, raw string) error {
			v, err := cd.parse(raw)
			if err != nil {
				return err
			}
			*field(c) = v
			return nil
		},
		get: func(c *Config) string { return cd.format(*field(c)) },
		validate: func(c *Config) error {
			for _, check := range checks {
				if err := check(*field(c)); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// stringCodec takes the value as is; kind only documents what is expected,
// the checks enforce it.
func stringCodec(kind string) codec[string] {
	return codec[string]{
		kind: kind, yamlTag: "!!str",
		parse:  func(s string) (string, error) { return s, nil },
		format: func(s string) string { return s },
	}
}

var durationCodec = codec[time.Duration]{
	kind: "duration", yamlTag: "!!str",
	parse: func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: %w", s, err)
		}
		return d, nil
	},
	format: humantext.Setting,
}

var intCodec = codec[int]{
	kind: "int", yamlTag: "!!int",
	parse: func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("invalid integer %q: %w", s, numErr(err))
		}
		return n, nil
	},
	format: strconv.Itoa,
}

var floatCodec = codec[float64]{
	kind: "number", yamlTag: "!!float",
	parse: func(s string) (float64, error) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid number %q: %w", s, numErr(err))
		}
		// NaN compares false with everything, so it would slip through
		// every range check; infinities are never meant either.
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("invalid number %q: not finite", s)
		}
		return f, nil
	},
	format: func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
}

var boolCodec = codec[bool]{
	kind: "bool", yamlTag: "!!bool",
	parse: func(s string) (bool, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, fmt.Errorf("invalid boolean %q: want true or false", s)
		}
		return b, nil
	},
	format: strconv.FormatBool,
}

// numErr drops strconv's "strconv.Atoi: parsing ..." prefix, which would
// repeat the value the message already quotes.
func numErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

func positive(v time.Duration) error {
	if v <= 0 {
		return fmt.Errorf("must be greater than 0, got %s", humantext.Setting(v))
	}
	return nil
}

func nonNegative(v time.Duration) error {
	if v < 0 {
		return fmt.Errorf("must not be negative, got %s", humantext.Setting(v))
	}
	return nil
}

func oneOf(allowed ...string) func(string) error {
	return func(s string) error {
		for _, a := range allowed {
			if s == a {
				return nil
			}
		}
		return fmt.Errorf("invalid value %q: want one of %s", s, strings.Join(allowed, ", "))
	}
}

// checkSchedule accepts what the daemon's scheduler accepts. cron turns a
// zero or negative @every into one second; refusing it is kinder than a
// reaper that silently runs every second.
func checkSchedule(s string) error {
	if _, err := cron.ParseStandard(s); err != nil {
		return fmt.Errorf("invalid schedule %q: %w", s, err)
	}
	if every, ok := strings.CutPrefix(s, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(every)); err == nil && d <= 0 {
			return fmt.Errorf("invalid schedule %q: @every needs a positive duration", s)
		}
	}
	return nil
}

func checkListen(s string) error {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("invalid listen address %q: %w", s, err)
	}
	return nil
}

// pushLabelName is a Prometheus label name that is not reserved (__*).
var pushLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParsePushGrouping reads pushgateway_grouping: name=value pairs separated
// by commas, each name a label name other than job (the push's own) and
// given once, each value non-empty. Empty means no grouping label.
func ParsePushGrouping(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case !ok || value == "":
			return nil, fmt.Errorf("invalid grouping %q: want name=value pairs separated by commas", pair)
		case !pushLabelName.MatchString(name) || strings.HasPrefix(name, "__"):
			return nil, fmt.Errorf("invalid grouping label name %q", name)
		case name == "job":
			return nil, fmt.Errorf("grouping label job: the push's job is always lock_reaper")
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("grouping label %s is given twice", name)
		}
		out[name] = value
	}
	return out, nil
}

func checkPushGrouping(s string) error {
	_, err := ParsePushGrouping(s)
	return err
}

// checkHTTPURL accepts an empty value (feature off) or an absolute http(s)
// URL. The URL may carry basic-auth credentials, so only its redacted form is
// ever quoted.
func checkHTTPURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid URL %q: %w", redactSecret(s), cleanURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid URL %q: want an http:// or https:// URL", redactSecret(s))
	}
	if u.Host == "" {
		return fmt.Errorf("invalid URL %q: no host", redactSecret(s))
	}
	return nil
}

// cleanURLError strips the *url.Error wrapper, whose message quotes the whole
// URL, password included.
func cleanURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
