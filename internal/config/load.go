package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// configEnv names the config file when --config is not given.
const configEnv = "REAPER_CONFIG"

// maxSecretFileSize bounds what a NAME_FILE variable may point to, so a
// mistaken /dev/zero fails instead of eating memory.
const maxSecretFileSize = 1 << 20

// Loader layers the configuration sources. RegisterKeys makes one; Load
// uses it after the flag set has been parsed.
type Loader struct {
	config     *flagValue   // --config
	kubeconfig *flagValue   // --kubeconfig
	flags      []*flagValue // parallel to settings; a key without a flag has one never set
}

// Register defines --config and the flags of every setting on fs (what
// `lock-reaper config` takes); RegisterKeys says more.
func Register(fs *pflag.FlagSet) *Loader {
	return RegisterKeys(fs, func(Key) bool { return true })
}

// RegisterKeys defines --config, --kubeconfig and one flag for each setting
// use picks on fs, and returns the Loader that reads them back. A command
// binds only the keys it uses, so a flag it would ignore is an unknown
// flag; the environment and the config file still set every key. Commands
// may define their own flags on the same FlagSet, before or after. Call it
// once per FlagSet, before fs.Parse.
func RegisterKeys(fs *pflag.FlagSet, use func(Key) bool) *Loader {
	l := &Loader{config: &flagValue{kind: "file"}}
	fs.Var(l.config, ConfigFlag, "path of the YAML configuration `file` (env "+configEnv+")")
	l.kubeconfig = registerKubeconfig(fs)
	def := Default()
	for i := range settings {
		s := &settings[i]
		v := &flagValue{def: s.get(&def), kind: s.kind, isBool: s.isBool, redact: s.redact}
		l.flags = append(l.flags, v)
		if !use(s.keyOf(&def)) {
			continue
		}
		f := fs.VarPF(v, s.flag(), "", s.usage())
		if s.isBool {
			f.NoOptDefVal = "true" // a bare --flag means true
		}
	}
	return l
}

// Load returns the configuration: defaults, overridden by the config file,
// then by REAPER_* variables (each also as NAME_FILE), then by the flags set
// on the command line. getenv is os.LookupEnv in production; nil means an
// empty environment. All errors are reported together, each naming its
// source and key. The result is validated.
func (l *Loader) Load(getenv func(string) (string, bool)) (Config, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	c := Default()
	var errs []error

	path, err := l.configPath(getenv)
	if err != nil {
		return Config{}, err
	}
	if path != "" {
		errs = append(errs, loadFile(&c, path)...)
	}

	for i := range settings {
		s := &settings[i]
		v, src, ok, err := lookupEnv(getenv, s.env())
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			if err := s.apply(&c, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", src, err))
			}
		}
	}

	for i, f := range l.flags {
		if !f.set {
			continue
		}
		s := &settings[i]
		if err := s.apply(&c, f.val); err != nil {
			errs = append(errs, fmt.Errorf("flag --%s: %w", s.flag(), err))
		}
	}

	c.Kubernetes.Kubeconfig, c.Kubernetes.KubeconfigEnv = l.kubeconfigPaths(getenv)

	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LogFormat is log.format as Load would resolve it, read on its own so that
// a configuration that fails to load can still be reported in the format
// asked for: the flag, else the environment, else the config file, else the
// default. It never fails; a value it cannot read is the default's.
func (l *Loader) LogFormat(getenv func(string) (string, bool)) string {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	for i := range settings {
		s := &settings[i]
		if s.key != "log.format" {
			continue
		}
		if f := l.flags[i]; f.set {
			return f.val
		}
		if v, _, ok, err := lookupEnv(getenv, s.env()); ok && err == nil {
			return v
		}
		c := Default()
		if path, err := l.configPath(getenv); err == nil && path != "" {
			_ = loadFile(&c, path)
		}
		return c.Log.Format
	}
	return Default().Log.Format
}

// configPath picks the config file: --config, else REAPER_CONFIG. An empty
// value means no file, so --config= can switch off a file the environment
// names.
func (l *Loader) configPath(getenv func(string) (string, bool)) (string, error) {
	// The _FILE convention makes no sense for a path, and taking a file's
	// content for a path would quote that content in errors.
	if _, ok := getenv(configEnv + "_FILE"); ok {
		return "", fmt.Errorf("%s_FILE is not supported: set %s to the config file's path", configEnv, configEnv)
	}
	if l.config.set {
		return l.config.val, nil
	}
	v, _ := getenv(configEnv)
	return v, nil
}

// apply parses raw into the setting's field and checks it. Errors about a
// secret setting have its passwords removed.
func (s *setting) apply(c *Config, raw string) error {
	err := s.set(c, raw)
	if err == nil {
		err = s.problem(c)
	}
	return s.scrubErr(err, raw)
}

// check validates the setting's current value, without leaking secrets.
func (s *setting) check(c *Config) error {
	return s.scrubErr(s.problem(c), s.get(c))
}

// problem is what is wrong with the setting's value: its own checks', or,
// for a field of Config.Pass, what reaper.Config.Validate says of its key.
func (s *setting) problem(c *Config) error {
	if s.inPass {
		byKey, _ := passProblems(c.Pass)
		return byKey[s.key]
	}
	return s.validate(c)
}

// lookupEnv reads NAME or NAME_FILE (a path whose content, without trailing
// newlines, is the value; meant for mounted secrets). src names where the
// value came from, for error messages.
func lookupEnv(getenv func(string) (string, bool), name string) (val, src string, ok bool, err error) {
	v, hasVal := getenv(name)
	path, hasFile := getenv(name + "_FILE")
	switch {
	case hasVal && hasFile:
		return "", "", false, fmt.Errorf("%s and %s_FILE are both set: set only one", name, name)
	case hasFile:
		src = name + "_FILE"
		if path == "" {
			return "", "", false, fmt.Errorf("%s: empty path", src)
		}
		data, err := readLimited(path, maxSecretFileSize)
		if err != nil {
			return "", "", false, fmt.Errorf("%s: reading secret file: %w", src, err)
		}
		return strings.TrimRight(string(data), "\r\n"), src, true, nil
	case hasVal:
		return v, name, true, nil
	}
	return "", "", false, nil
}

// readLimited reads a whole file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// flagValue records a flag's raw text. Parsing waits for Load, so that flag
// errors read like env and file errors, and so the flag package, which quotes
// a rejected value in its own message, never sees a secret fail.
type flagValue struct {
	def    string
	val    string
	set    bool
	kind   string // what the value is, e.g. duration: the flag's type in help
	isBool bool
	redact func(string) string // what may be shown of a value
}

func (f *flagValue) String() string {
	if f == nil {
		return ""
	}
	if f.set && f.redact != nil {
		return f.redact(f.val)
	}
	if f.set {
		return f.val
	}
	return f.def
}

func (f *flagValue) Set(s string) error {
	f.val, f.set = s, true
	return nil
}

// Type is the value's kind; pflag shows it in help when the usage has no
// back-quoted name, and quotes the default only of a "string".
func (f *flagValue) Type() string {
	if f.isBool {
		return "bool"
	}
	return f.kind
}

// usage is the flag's help line. The back-quoted kind becomes the value's
// name in pflag's help.
func (s *setting) usage() string {
	summary, _, _ := strings.Cut(s.doc, ". ")
	summary = strings.TrimSuffix(summary, ".")
	return fmt.Sprintf("%s (`%s`, env %s)", summary, s.kind, s.env())
}
