package errdefs

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The plugin boundary carries error classes as gRPC status codes, the way
// containerd's errgrpc does: ToGRPC on the plugin side, FromGRPC in the core.
var grpcCodes = []struct {
	class error
	code  codes.Code
}{
	{ErrInvalid, codes.InvalidArgument},
	{ErrHostUnsupported, codes.FailedPrecondition},
	{ErrIntegrity, codes.DataLoss},
	{ErrAccessObserved, codes.PermissionDenied},
	{ErrTimeout, codes.DeadlineExceeded},
	{ErrNotFound, codes.NotFound},
	{ErrNotExecutable, codes.Aborted},
	{ErrEvalFailed, codes.OutOfRange},
	{ErrPlugin, codes.Internal},
}

// ToGRPC turns err into a gRPC status error carrying its class. An error
// that already is a status passes through; an unclassified one is Internal.
func ToGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, err.Error())
	}
	for _, c := range grpcCodes {
		if errors.Is(err, c.class) {
			return status.Error(c.code, err.Error())
		}
	}
	return status.Error(codes.Internal, err.Error())
}

// FromGRPC turns a status error from a plugin back into a classed error
// whose message is the plugin's. Transport failures (Unavailable, Canceled,
// Unknown) are plugin faults.
func FromGRPC(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return Errorf(ErrPlugin, "%w", err)
	}
	for _, c := range grpcCodes {
		if st.Code() == c.code {
			return Errorf(c.class, "%s", st.Message())
		}
	}
	return Errorf(ErrPlugin, "%s (%s)", st.Message(), st.Code())
}

// IsUnimplemented reports whether err is codes.Unimplemented: the plugin
// does not have the capability the call asked for.
func IsUnimplemented(err error) bool {
	return status.Code(err) == codes.Unimplemented
}
