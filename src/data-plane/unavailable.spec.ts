import { ErrorCode } from '../common/errors/error-code';
import { DataPlaneError } from './data-plane.service';
import { dataPlaneUnavailable } from './unavailable';

describe('dataPlaneUnavailable', () => {
  const code = ErrorCode.CredentialPropagationFailure;

  it('answers 503 with Retry-After, naming the region, for a data-plane server that does not answer', () => {
    const err = new DataPlaneError('AWS_US_WEST_2', 'server-1', true, new Error('timeout expired'));
    const answer = dataPlaneUnavailable(code, err, 'The credential could not be removed');
    expect(answer?.getStatus()).toBe(503);
    expect(answer?.headers).toEqual({ 'Retry-After': '5' });
    expect(answer?.body).toMatchObject({ errorCode: code, statusCode: 503 });
    expect(answer?.body.message).toContain('AWS_US_WEST_2');
  });

  it('answers 503 for the metadata database failing before the data plane was reached (its server looked up)', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const answer = dataPlaneUnavailable(code, refused, 'The credential could not be removed');
    expect(answer?.getStatus()).toBe(503);
    expect(answer?.headers).toEqual({ 'Retry-After': '5' });
    expect(answer?.body).toMatchObject({ errorCode: code, statusCode: 503 });
  });

  it('leaves a refusal on the merits, and any other failure, to the caller', () => {
    const refusal = new DataPlaneError('AWS_US_WEST_2', 'server-1', false, new Error('permission denied'));
    expect(dataPlaneUnavailable(code, refusal, 'x')).toBeNull();
    expect(dataPlaneUnavailable(code, new TypeError('a bug'), 'x')).toBeNull();
  });
});
