import { tenantDatabaseConnection } from './tenant-session';

describe('the connection settings of an admin session in a customer database', () => {
  it('start with the safe search path', () => {
    expect(tenantDatabaseConnection('postgres://admin:pw@db.example:5432/t_0123')).toEqual({
      connectionString: 'postgres://admin:pw@db.example:5432/t_0123',
      options: '-c search_path=pg_catalog,pg_temp',
    });
  });

  it("keep the admin URL's own options, with the safe search path last (it wins over one there)", () => {
    expect(
      tenantDatabaseConnection(
        'postgres://admin:pw@db.example:5432/t_0123?sslmode=disable&options=-c%20work_mem%3D7MB%20-c%20search_path%3Dpublic',
      ),
    ).toEqual({
      connectionString: 'postgres://admin:pw@db.example:5432/t_0123?sslmode=disable',
      options: '-c work_mem=7MB -c search_path=public -c search_path=pg_catalog,pg_temp',
    });
  });
});
