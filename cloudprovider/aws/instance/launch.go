package instance

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// tagParallelism is how many CreateTags calls a batch makes at once.
const tagParallelism = 8

// Launch creates one instance with an instant fleet. Launches of the same shape (the same
// CreateFleet input but for the token and the NodeClaim's own tags) that arrive together share
// one fleet; see BatchOptions.
//
// When nothing launched for it, Launch returns a *NoInstanceError with the fleet's errors; an
// error from the call itself is classified with awserr (throttling and 5xx have already been
// retried by the SDK). A pending or running instance already tagged with the request's
// NodeClaim is returned instead of launching another, so a launch retried after its answer was
// lost never makes a second instance.
//
// ctx bounds only the wait: a launch whose ctx ends before its batch is sent launches nothing,
// and one whose ctx ends later still gets its instance tagged, for a retry to find.
func (p *Provider) Launch(ctx context.Context, req LaunchRequest) (Launched, error) {
	if err := ctx.Err(); err != nil {
		return Launched{}, fmt.Errorf("launching %s: %w", req.ClientToken, err)
	}
	m := &member{req: req, done: make(chan struct{})}
	p.batches.add(m)
	select {
	case <-m.done:
		return m.result, m.err
	case <-ctx.Done():
		if !p.batches.withdraw(m) {
			p.opts.Logger.V(1).Info("launch abandoned while its fleet request is in flight; its instance is tagged for a retry to find",
				"client-token", req.ClientToken)
		}
		return Launched{}, fmt.Errorf("launching %s: %w", req.ClientToken, context.Cause(ctx))
	}
}

// launchBatch serves a batch: launches whose NodeClaim already has an instance get it, one
// remaining launch goes alone with its own token, several share a fleet.
func (p *Provider) launchBatch(members []*member) {
	// No member's context may cancel the others' launch; the timeout bounds the SDK's retries.
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Batch.CallTimeout)
	defer cancel()

	// Launches of one token (a NodeClaim retried while its launch is in flight) get one answer.
	byToken := map[string][]*member{}
	var leaders []*member
	for _, m := range members {
		if len(byToken[m.req.ClientToken]) == 0 {
			leaders = append(leaders, m)
		}
		byToken[m.req.ClientToken] = append(byToken[m.req.ClientToken], m)
	}
	results := p.launchUnique(ctx, leaders)
	for _, leader := range leaders {
		r := results[leader]
		for i, m := range byToken[leader.req.ClientToken] {
			if i > 0 {
				// Followers must not record the leader's fleet errors again.
				r = r.shared()
			}
			m.finish(r.launched, r.err)
		}
	}
}

// outcome is one launch's answer.
type outcome struct {
	launched Launched
	err      error
}

// shared is o marked as carrying fleet errors another launch records.
func (o outcome) shared() outcome {
	o.launched.ErrorsShared = true
	var none *NoInstanceError
	if errors.As(o.err, &none) {
		copied := *none
		copied.ErrorsShared = true
		o.err = &copied
	}
	return o
}

// launchUnique launches for members of distinct tokens.
func (p *Provider) launchUnique(ctx context.Context, members []*member) map[*member]outcome {
	results := make(map[*member]outcome, len(members))
	existing, err := p.existing(ctx, members)
	if err != nil {
		for _, m := range members {
			results[m] = outcome{err: err}
		}
		return results
	}
	var rest []*member
	for _, m := range members {
		if inst, ok := existing[m.req.Tags[awsv1.TagNodeClaim]]; ok {
			p.opts.Logger.V(1).Info("nodeclaim already has an instance", "nodeclaim", m.req.Tags[awsv1.TagNodeClaim], "instance", inst.ID)
			results[m] = outcome{launched: Launched{Instance: inst}}
			continue
		}
		rest = append(rest, m)
	}
	switch len(rest) {
	case 0:
	case 1:
		launched, err := p.launchOne(ctx, rest[0].req)
		results[rest[0]] = outcome{launched, err}
	default:
		maps.Copy(results, p.launchMany(ctx, rest))
	}
	return results
}

// existing finds the instances already launched for the members' NodeClaims, with one
// DescribeInstances per batch. It closes the window a batched launch leaves: the fleet's token
// covers the batch, not a NodeClaim retried in another batch, so the NodeClaim tag must.
func (p *Provider) existing(ctx context.Context, members []*member) (map[string]Instance, error) {
	var names []string
	for _, m := range members {
		if name := m.req.Tags[awsv1.TagNodeClaim]; name != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	found, err := p.findByNodeClaims(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("looking for instances already launched for %d nodeclaims: %w", len(names), err)
	}
	return found, nil
}

// launchOne launches req's instance with req's own token and tags, so that EC2 itself makes a
// retry idempotent.
func (p *Provider) launchOne(ctx context.Context, req LaunchRequest) (Launched, error) {
	out, err := p.ec2.CreateFleet(ctx, p.fleetInput(req, 1))
	if awserr.Code(err) == "IdempotentParameterMismatch" {
		// The token launched before with other overrides (offerings have since been marked
		// unavailable): the instance it launched is this launch's, if the lookup before the
		// launch missed it.
		if found, findErr := p.findByNodeClaims(ctx, []string{req.Tags[awsv1.TagNodeClaim]}); findErr == nil {
			if existing, ok := found[req.Tags[awsv1.TagNodeClaim]]; ok {
				return Launched{Instance: existing}, nil
			}
		}
	}
	if err != nil {
		return Launched{}, fmt.Errorf("creating fleet: %w", awserr.Classify(err))
	}
	fleetErrors := fleetErrorsOf(out, req.CapacityType)
	launched := launchedInstances(out, req)
	if len(launched) == 0 {
		return Launched{}, &NoInstanceError{Errors: fleetErrors}
	}
	launched[0].Errors = fleetErrors
	return launched[0], nil
}

// launchMany launches one fleet of len(members) instances, hands them out and tags each with
// its NodeClaim. Members the fleet had no instance for get its errors.
//
// Between the fleet's answer and CreateTags an instance carries only the shared tags (cluster,
// NodePool, EC2NodeClass, the class's own). If the controller dies there, no NodeClaim finds
// it, and garbage collection (controller/nodeclaim/garbagecollection) terminates it once past
// its grace period: List selects instances by their NodePool tag, not their NodeClaim tag.
func (p *Provider) launchMany(ctx context.Context, members []*member) map[*member]outcome {
	// Token order makes the hand-out the same when EC2 replays the fleet for a retried batch.
	members = slices.SortedFunc(slices.Values(members), func(a, b *member) int { return cmp.Compare(a.req.ClientToken, b.req.ClientToken) })
	req := members[0].req
	req.Tags = sharedTags(req.Tags)
	req.ClientToken = batchToken(members)
	results := make(map[*member]outcome, len(members))

	out, err := p.ec2.CreateFleet(ctx, p.fleetInput(req, len(members)))
	if err != nil {
		err = fmt.Errorf("creating fleet for %d instances: %w", len(members), awserr.Classify(err))
		for _, m := range members {
			results[m] = outcome{err: err}
		}
		return results
	}
	fleetErrors := fleetErrorsOf(out, req.CapacityType)
	launched := launchedInstances(out, req)
	p.opts.Logger.V(1).Info("launched batched fleet", "requested", len(members), "launched", len(launched), "errors", len(fleetErrors))

	outcomes := make([]outcome, len(members))
	var wg sync.WaitGroup
	sem := make(chan struct{}, tagParallelism)
	for i, m := range members {
		if i >= len(launched) {
			outcomes[i] = outcome{err: &NoInstanceError{Errors: fleetErrors}}
			continue
		}
		l := launched[i]
		l.Errors = fleetErrors
		l.Instance.Tags = maps.Clone(m.req.Tags)
		outcomes[i] = outcome{launched: l}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := p.tagNodeClaim(ctx, l.Instance.ID, ownTags(m.req.Tags)); err != nil {
				outcomes[i] = outcome{err: err}
			}
		})
	}
	wg.Wait()

	// Every member sees the fleet errors; the first that can record them does, the others are
	// marked so that refused offerings are recorded once per fleet.
	reporter := false
	for i, m := range members {
		r := outcomes[i]
		var none *NoInstanceError
		if r.err == nil || errors.As(r.err, &none) {
			if reporter {
				r = r.shared()
			}
			reporter = true
		}
		results[m] = r
	}
	return results
}

// tagNodeClaim adds a NodeClaim's own tags to its batched instance. Until it does, a retried
// launch of the NodeClaim cannot find the instance, so a failure is the launch's failure; the
// untagged instance is left to garbage collection.
func (p *Provider) tagNodeClaim(ctx context.Context, id string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(tags)}); err != nil {
		return fmt.Errorf("tagging instance %s with nodeclaim %s: %w", id, tags[awsv1.TagNodeClaim], awserr.Classify(err))
	}
	return nil
}

// batchToken is a batch's ClientToken: a digest of its shape and of its members' tokens, so
// that a batch retried with the same members and input gets EC2's first answer, and the same
// members asking for something else launch anew. EC2 allows 64 ASCII characters.
func batchToken(members []*member) string {
	tokens := make([]string, 0, len(members))
	for _, m := range members {
		tokens = append(tokens, m.req.ClientToken)
	}
	slices.Sort(tokens)
	h := sha256.New()
	h.Write([]byte(batchKey(members[0].req)))
	for _, token := range tokens {
		h.Write([]byte{0})
		h.Write([]byte(token))
	}
	return "joinery-batch-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// fleetErrorsOf is the fleet's error list in joinery's terms.
func fleetErrorsOf(out *ec2.CreateFleetOutput, capacityType string) []FleetError {
	var errs []FleetError
	for _, e := range out.Errors {
		ov := overrideOf(e.LaunchTemplateAndOverrides)
		errs = append(errs, FleetError{
			TemplateName: templateNameOf(e.LaunchTemplateAndOverrides), InstanceType: ov.InstanceType, Zone: ov.Zone, SubnetID: ov.SubnetID,
			CapacityType: capacityType, Code: aws.ToString(e.ErrorCode), Message: aws.ToString(e.ErrorMessage),
		})
	}
	return errs
}

// launchedInstances lists the fleet's instances in the order of its answer.
func launchedInstances(out *ec2.CreateFleetOutput, req LaunchRequest) []Launched {
	var all []Launched
	for _, launched := range out.Instances {
		ov := overrideOf(launched.LaunchTemplateAndOverrides)
		for _, id := range launched.InstanceIds {
			inst := Instance{
				ID: id, InstanceType: string(launched.InstanceType), Zone: ov.Zone, SubnetID: ov.SubnetID,
				State: string(ec2types.InstanceStateNamePending), CapacityType: req.CapacityType, Tags: maps.Clone(req.Tags),
			}
			if launched.Lifecycle == ec2types.InstanceLifecycleSpot {
				inst.CapacityType = karpv1.CapacityTypeSpot
			}
			all = append(all, Launched{Instance: inst, TemplateName: templateNameOf(launched.LaunchTemplateAndOverrides)})
		}
	}
	return all
}
