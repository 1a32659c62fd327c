package nodeclass

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// capacityBlockExpiryWarning is how long before its end a capacity block counts as expiring:
// EC2 starts reclaiming a block's instances 30 minutes before it ends, so nodes on it must
// be replaced before then.
const capacityBlockExpiryWarning = 40 * time.Minute

// CapacityReservations resolves spec.capacityReservationSelectorTerms to the active
// reservations they select, sorted by id. No terms, or no matches, is an empty list: these
// reservations are an optional first choice, not a requirement.
func (r *Resolver) CapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	found := map[string]ec2types.CapacityReservation{}
	var ids []string
	for _, term := range nc.Spec.CapacityReservationSelectorTerms {
		if term.ID != "" {
			ids = append(ids, term.ID)
			continue
		}
		filters := append(tagFilters(term.Tags), filter("state", "active"))
		if term.OwnerID != "" {
			filters = append(filters, filter("owner-id", term.OwnerID))
		}
		if err := r.collectReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: filters}, found); err != nil {
			return nil, err
		}
	}
	if len(ids) > 0 {
		if err := r.reservationsByID(ctx, dedupe(ids), found); err != nil {
			return nil, err
		}
	}
	now := r.now()
	out := make([]awsv1.CapacityReservation, 0, len(found))
	for _, cr := range found {
		out = append(out, reservationStatus(cr, now))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	logr.FromContextOrDiscard(ctx).V(1).Info("resolved capacity reservations", "nodeClass", nc.Name, "count", len(out))
	return out, nil
}

// reservationsByID describes reservations named by id. EC2 fails the whole call for one
// unknown id, so on that answer each id is asked for alone and the unknown ones are skipped.
func (r *Resolver) reservationsByID(ctx context.Context, ids []string, found map[string]ec2types.CapacityReservation) error {
	err := r.collectReservations(ctx, &ec2.DescribeCapacityReservationsInput{
		CapacityReservationIds: ids, Filters: []ec2types.Filter{filter("state", "active")},
	}, found)
	if err == nil || !isCode(err, "InvalidCapacityReservationId.NotFound") {
		return err
	}
	for _, id := range ids {
		err := r.collectReservations(ctx, &ec2.DescribeCapacityReservationsInput{
			CapacityReservationIds: []string{id}, Filters: []ec2types.Filter{filter("state", "active")},
		}, found)
		if err != nil && !isCode(err, "InvalidCapacityReservationId.NotFound") {
			return err
		}
	}
	return nil
}

func (r *Resolver) collectReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, found map[string]ec2types.CapacityReservation) error {
	pager := ec2.NewDescribeCapacityReservationsPaginator(r.ec2, in)
	for pager.HasMorePages() {
		out, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing capacity reservations: %w", err)
		}
		for _, cr := range out.CapacityReservations {
			found[aws.ToString(cr.CapacityReservationId)] = cr
		}
	}
	return nil
}

func reservationStatus(cr ec2types.CapacityReservation, now time.Time) awsv1.CapacityReservation {
	out := awsv1.CapacityReservation{
		ID:                    aws.ToString(cr.CapacityReservationId),
		InstanceType:          aws.ToString(cr.InstanceType),
		AvailabilityZone:      aws.ToString(cr.AvailabilityZone),
		OwnerID:               aws.ToString(cr.OwnerId),
		ReservationType:       awsv1.CapacityReservationTypeDefault,
		State:                 awsv1.CapacityReservationStateActive,
		InstanceMatchCriteria: string(cr.InstanceMatchCriteria),
	}
	if cr.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
		out.ReservationType = awsv1.CapacityReservationTypeCapacityBlock
	}
	if cr.EndDate != nil {
		out.EndTime = &metav1.Time{Time: *cr.EndDate}
		if out.ReservationType == awsv1.CapacityReservationTypeCapacityBlock && !now.Before(cr.EndDate.Add(-capacityBlockExpiryWarning)) {
			out.State = awsv1.CapacityReservationStateExpiring
		}
	}
	return out
}
