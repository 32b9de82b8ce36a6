package runner

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a cron schedule read in a time zone: the ticks of a cron.
type Schedule struct {
	spec cron.Schedule
	loc  *time.Location
}

// ParseSchedule parses spec, a standard five-field cron expression
// (minute hour day-of-month month day-of-week, as "0 18 * * 1-5") or a
// descriptor (@hourly, @daily, @every 90m), read in the IANA time zone tz
// ("": UTC). Its error says which of the two is wrong and how.
func ParseSchedule(spec, tz string) (Schedule, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Schedule{}, fmt.Errorf("time zone %q is not an IANA time zone (such as Europe/Paris or UTC)", tz)
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %v (a schedule is five fields, minute hour day-of-month month "+
			"day-of-week, such as \"0 18 * * 1-5\", or @hourly, @daily, @every 1h)", spec, err)
	}
	return Schedule{spec: s, loc: loc}, nil
}

// Next is the schedule's first tick after t, in UTC (zero for a schedule
// that never ticks again).
func (s Schedule) Next(t time.Time) time.Time {
	return s.spec.Next(t.In(s.loc)).UTC()
}

// Scheduled is a run an agent's definition schedules (its schedule:): the
// agent runs with Input at each tick of Cron, read in Timezone.
type Scheduled struct {
	Cron     string         `json:"cron" yaml:"cron"`
	Timezone string         `json:"timezone,omitempty" yaml:"timezone"`
	Input    map[string]any `json:"input,omitempty" yaml:"input"`
}
