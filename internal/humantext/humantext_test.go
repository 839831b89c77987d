package humantext

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0 s",
		400 * time.Microsecond:                "1 ms",
		156 * time.Millisecond:                "156 ms",
		1500 * time.Millisecond:               "2 s",
		45 * time.Second:                      "45 s",
		59*time.Second + 600*time.Millisecond: "1 min",
		3*time.Minute + 20*time.Second:        "3 min 20 s",
		3 * time.Minute:                       "3 min",
		12*time.Minute + 40*time.Second:       "13 min",
		time.Hour + 5*time.Minute:             "1 h 5 min",
		23 * time.Hour:                        "23 h",
		31*time.Hour + 45*time.Minute:         "32 h",
		50 * time.Hour:                        "2 d 2 h",
		12 * 24 * time.Hour:                   "12 d",
		-3 * time.Minute:                      "in 3 min",
		math.MinInt64:                         "in 106,751 d",
	} {
		assert.Equal(t, want, Duration(d), "%v", d)
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		1234567 * time.Nanosecond:             "1ms",
		12345 * time.Millisecond:              "12.3s",
		-12345 * time.Millisecond:             "-12.3s",
		90*time.Minute + 400*time.Millisecond: "1h30m0s",
		23 * time.Hour:                        "23h0m0s",
		59*time.Second + 960*time.Millisecond: "1m0s",
	} {
		assert.Equal(t, want, Short(d), "%v", d)
	}
}

func TestSettingReadsBack(t *testing.T) {
	for _, d := range []time.Duration{0, 100 * time.Millisecond, 1500 * time.Millisecond, time.Minute, 90 * time.Minute, 2 * time.Hour, 25*time.Hour + time.Second} {
		back, err := time.ParseDuration(Setting(d))
		assert.NoError(t, err, Setting(d))
		assert.Equal(t, d, back, Setting(d))
	}
	assert.Equal(t, "1m", Setting(time.Minute))
	assert.Equal(t, "2h30m", Setting(150*time.Minute))
	assert.Equal(t, "1h0m1s", Setting(time.Hour+time.Second))
}
