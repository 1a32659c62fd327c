package instance

// PendingLaunches is how many launches wait in p's open batches.
func PendingLaunches(p *Provider) int { return p.batches.pending() }
