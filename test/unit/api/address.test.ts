import { describe, expect, it } from 'vitest';
import { baseUrlFix, wrongAddressError } from '../../../src/api/address.js';
import { ApiError } from '../../../src/api/errors.js';

describe('a baseUrl the service has no route under (issue 14.6)', () => {
  it('names the root to set when baseUrl carries the API path itself', () => {
    expect(baseUrlFix('http://127.0.0.1:8080/datastore/v1')).toBe('set baseUrl to "http://127.0.0.1:8080": dssync adds /datastore/v1/... itself');
    expect(baseUrlFix('https://svc.example.com/api/datastore/v1/')).toBe('set baseUrl to "https://svc.example.com/api": dssync adds /datastore/v1/... itself');
    expect(baseUrlFix('https://svc.example.com/datastore')).toBe('set baseUrl to "https://svc.example.com": dssync adds /datastore/v1/... itself');
  });

  it('points at another path prefix, or at host and port', () => {
    expect(baseUrlFix('https://svc.example.com/api')).toMatch(/^check the path "\/api" of baseUrl: .*"https:\/\/svc\.example\.com"/);
    expect(baseUrlFix('https://svc.example.com')).toBe("check baseUrl's host and port: is the document service served there?");
  });

  it('is a configuration error (E_WRONG_ADDRESS) naming the route and baseUrl', () => {
    const e = wrongAddressError('http://h/datastore/v1', new ApiError({ code: 'E_NOT_FOUND', status: 404, method: 'GET', path: '/datastore/v1/datastore/v1/data-sources', message: 'x' }));
    expect(e).toMatchObject({ code: 'E_WRONG_ADDRESS', status: 404, retryable: false });
    expect(e.message).toBe('baseUrl "http://h/datastore/v1" looks wrong: the service has no route GET /datastore/v1/datastore/v1/data-sources (404 Not Found); set baseUrl to "http://h": dssync adds /datastore/v1/... itself');
  });
});
