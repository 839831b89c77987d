package reaper

// Phases of a pass, as Options.Phase names them.
const (
	// PhaseReadingDatabase: the locks are read; the database is next.
	PhaseReadingDatabase = "reading database"
	// PhaseReleasing: a batch of releases is done (done of total holdings).
	PhaseReleasing = "releasing"
	// PhaseUpdatingTasks: a batch of task updates is done (done of total).
	PhaseUpdatingTasks = "updating tasks"
)

// phase tells opts.Phase, when set, where the pass is.
func (o Options) phase(name string, done, total int) {
	if o.Phase != nil {
		o.Phase(name, done, total)
	}
}

// progress tells the pass's Phase callback, when set, how far acting got.
func (a *actor) progress(name string, done, total int) {
	if a.phase != nil {
		a.phase(name, done, total)
	}
}
